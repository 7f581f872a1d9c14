"""What every tool source offers the executors: a snapshot of tool definitions and a way to call one.

A `ToolSource` (an MCP server, an OpenAPI service) lists its tools as `RemoteTool`s: the OpenAI
function format (name, description, JSON-Schema parameters) plus the output schema the planner uses
for references, the per-tool `ToolPolicy` (approval, whether retries are safe, timeout), and what
the source needs to call it again later (the MCP tool's own name, the HTTP binding). A snapshot is
versioned by the hash of its definitions; a run records the definitions it planned and executed
with and calls `source.call(tool, args, context)` with exactly those, so a resumed run or a
takeover on another replica calls what was planned, even if the service changed since.

`CallContext` says which node of which run a call belongs to (the HTTP caller derives a stable
`Idempotency-Key` from it); the scheduler sets it for the duration of a call with `call_scope`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from executors.context import run_tenant
from executors.sources.http_binding import HttpBinding

Approval = Literal["none", "required"]
TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]{0,63}$")  # what the planner's catalog accepts
MAX_DESCRIPTION_CHARS = 1000
MAX_SCHEMA_BYTES = 64 * 1024


class ToolPolicy(BaseModel):
    """How the executors treat one remote tool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    approval: Approval = Field(default="none", description="'required': each call waits for a person's approval.")
    retryable: bool = Field(default=False, description="May a failed call be sent again (no side effect repeats)?")
    timeout_s: float = Field(default=30.0, gt=0, le=3600, description="Longest time one call may take.")
    concurrency_class: str | None = Field(default=None, max_length=64, description="Default: one per source.")
    slow: bool = False


class PolicyOverrides(BaseModel):
    """The operator's word over what a source's definitions suggest (e.g. MCP annotations)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    approval: Approval | None = Field(default=None, description="For every tool of the source, when set.")
    tools: dict[str, Approval] = Field(default_factory=dict, description="Per tool (its name in the catalog).")
    timeout_s: float | None = Field(default=None, gt=0, le=3600)

    def apply(self, name: str, policy: ToolPolicy) -> ToolPolicy:
        approval = self.tools.get(name, self.approval or policy.approval)
        timeout = self.timeout_s or policy.timeout_s
        return policy.model_copy(update={"approval": approval, "timeout_s": timeout})


class RemoteTool(BaseModel):
    """One tool of a source, as snapshotted and recorded with a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=TOOL_NAME.pattern, description="The name in the catalog the planner sees.")
    remote_name: str = Field(min_length=1, max_length=256, description="The name the source knows it by.")
    description: str = Field(max_length=MAX_DESCRIPTION_CHARS)
    parameters: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    policy: ToolPolicy = ToolPolicy()
    annotations: dict[str, Any] | None = Field(default=None, description="The source's own hints (MCP).")
    binding: HttpBinding | None = Field(default=None, description="An OpenAPI operation: where each argument goes.")

    def openai_tool(self) -> dict[str, Any]:
        """The OpenAI `tools=[...]` form, with planstack's `output_schema` extension when declared."""
        function: dict[str, Any] = {"name": self.name, "description": self.description, "parameters": self.parameters}
        if self.output_schema is not None:
            function["output_schema"] = self.output_schema
        return {"type": "function", "function": function}

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical definition: a changed definition is a different tool version."""
        return hashlib.sha256(canonical_json(self.model_dump(mode="json")).encode()).hexdigest()


class ToolSnapshot(BaseModel):
    """A source's tools at one moment, versioned by the hash of their definitions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source_id: str
    tools: tuple[RemoteTool, ...]

    @property
    def version(self) -> str:
        payload = canonical_json([tool.model_dump(mode="json") for tool in self.tools])
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def get(self, name: str) -> RemoteTool:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)

    def openai_tools(self) -> list[dict[str, Any]]:
        return [tool.openai_tool() for tool in self.tools]


@dataclass(frozen=True)
class CallContext:
    """Which run, round and node a call belongs to (None outside a run)."""

    tenant: str | None = None
    run_id: str | None = None
    round: int = 0
    node_id: str | None = None

    def idempotency_key(self) -> str | None:
        """A key that is the same for every attempt of this node in this round (retries, and a
        takeover after a crash), and different for anything else; None outside a run."""
        if self.run_id is None or self.node_id is None:
            return None
        material = canonical_json(["planstack-idempotency-v1", self.run_id, self.round, self.node_id])
        return "ps-" + hashlib.sha256(material.encode()).hexdigest()[:40]


_CALL: ContextVar[CallContext | None] = ContextVar("planstack_tool_call", default=None)


def current_call_context() -> CallContext:
    """The context of the call being made (set by `call_scope`); outside one, only the run's tenant."""
    return _CALL.get() or CallContext(tenant=run_tenant())


@contextmanager
def call_scope(context: CallContext) -> Iterator[CallContext]:
    """Make `context` the current call context inside the block (task-local, like the tenant)."""
    token = _CALL.set(context)
    try:
        yield context
    finally:
        _CALL.reset(token)


@runtime_checkable
class ToolSource(Protocol):
    """A source of remote tools (one per toolset)."""

    @property
    def source_id(self) -> str: ...

    def snapshot(self) -> ToolSnapshot:
        """The last definitions listed (`refresh` first; a source built from stored ones has them)."""
        ...

    async def refresh(self) -> ToolSnapshot:
        """List the tools again from the service."""
        ...

    async def call(self, tool: RemoteTool, args: Mapping[str, Any], context: CallContext) -> Any:
        """Call `tool` (a definition from a snapshot, maybe an older recorded one) with validated
        arguments; returns JSON output or raises a `ToolError`."""
        ...

    async def aclose(self) -> None: ...


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def catalog_name(remote_name: str, taken: Sequence[str] = ()) -> str:
    """A name the planner's catalog accepts for a tool the source calls `remote_name`: the same
    name when it fits, else letters/digits/'_.-' only, starting with a letter, ≤ 64, unique."""
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", remote_name)
    if not name or not name[0].isalpha():
        name = "t_" + name
    name = name[:64]
    unique, n = name, 2
    while unique in taken:
        suffix = f"_{n}"
        unique, n = name[: 64 - len(suffix)] + suffix, n + 1
    return unique


def bounded_schema(schema: Any, where: str) -> dict[str, Any]:
    """`schema` if it is a JSON object of at most MAX_SCHEMA_BYTES; ValueError otherwise."""
    if not isinstance(schema, dict):
        raise ValueError(f"{where}: a schema must be a JSON object")
    if len(canonical_json(schema).encode()) > MAX_SCHEMA_BYTES:
        raise ValueError(f"{where}: the schema is larger than {MAX_SCHEMA_BYTES} bytes")
    return schema

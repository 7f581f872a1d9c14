"""Remote tools as the executors' own `ToolSpec`s, so the scheduler runs them like local ones.

A local tool's spec validates arguments with a pydantic model built from type hints; a remote tool
has a JSON Schema instead. `RemoteToolSpec` is a `ToolSpec` whose argument schema, validation and
call come from a `RemoteTool` and its `ToolSource`; everything else is the scheduler's as usual:
per-attempt timeout, retries (`None` = the scheduler's default when the policy says a retry is
safe, else 1 attempt), the per-tool circuit breaker, the concurrency class
(one per toolset unless the policy names one), approvals (`policy.approval`), the reuse of earlier
results (keyed on `version`, the definition's digest, so a changed tool is never reused).

Timeouts: the source enforces `policy.timeout_s` itself, because only it knows whether the request
may have had an effect (a timed-out `POST` without an idempotency key must not be retried); the
scheduler's per-attempt timeout is set a little longer (`backstop_timeout_s`) and only catches a
source that fails to stop.

Schemas come from the tenant's service, so they are turned into checkers by `schema_check`, which
the composition root injects (the gateway's RE2-based validator: a hostile `pattern` cannot stall
the event loop; executors cannot import it). Outputs are checked against the declared output schema
in a worker thread; a mismatch is a `ToolOutputError`, like a local tool returning the wrong type.

The call sees `current_call_context()` (run, round, node), which the scheduler sets with
`call_scope` around `spec.invoke`; `registry_with` builds a run's registry: the built-in tools plus
the tools of the toolsets the run uses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from executors.errors import ToolArgumentError, ToolOutputError
from executors.registry import ToolRegistry, ToolSpec
from executors.sources.errors import SourceError
from executors.sources.tool_source import RemoteTool, ToolSource, canonical_json, current_call_context

SchemaCheck = Callable[[Any], list[str]]  # a value's problems; empty when it is valid
SchemaCheckFactory = Callable[[dict[str, Any]], SchemaCheck]  # raises ValueError for an unusable schema
MAX_ARGS_BYTES = 256 * 1024


class SchemaDefinedArgs(BaseModel):
    """Placeholder `args_model` of a remote spec: its schema is the remote tool's, not a model's."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class RemoteToolSpec(ToolSpec):
    """A `ToolSpec` backed by a remote tool (see module doc)."""

    remote: RemoteTool | None = field(default=None, repr=False)
    source_id: str = ""
    check_args: SchemaCheck | None = field(default=None, repr=False)

    @property
    def is_async(self) -> bool:
        return True

    @property
    def breaker_key(self) -> str:
        """One breaker per toolset and tool: another toolset's (another tenant's) tool of the same name is
        another tool."""
        return f"{self.source_id}:{self.name}"

    @property
    def args_schema(self) -> dict[str, Any]:
        assert self.remote is not None
        return dict(self.remote.parameters)

    @property
    def output_schema(self) -> dict[str, Any]:
        assert self.remote is not None
        return dict(self.remote.output_schema or {})

    def validate_args(self, args: Any) -> dict[str, Any]:
        return self._checked(args)

    def prepare_call(self, args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        checked = self._checked(args)
        return checked, dict(checked)

    def _checked(self, args: Any) -> dict[str, Any]:
        if not isinstance(args, dict):
            raise ToolArgumentError(f"{self.name}: arguments must be a JSON object, got {type(args).__name__}")
        if len(canonical_json(args).encode()) > MAX_ARGS_BYTES:
            raise ToolArgumentError(f"{self.name}: arguments larger than {MAX_ARGS_BYTES} bytes")
        problems = self.check_args(args) if self.check_args is not None else []
        if problems:
            raise ToolArgumentError(f"{self.name}: invalid arguments: {'; '.join(problems[:5])}")
        return dict(args)


def remote_tool_spec(
    source: ToolSource, tool: RemoteTool, *, schema_check: SchemaCheckFactory, label: str | None = None
) -> RemoteToolSpec:
    """The spec the scheduler runs for `tool` of `source` (SourceError for an unusable schema); `label`
    names the source in metrics (its toolset's name; default its id)."""
    try:
        check_args = schema_check(tool.parameters)
        check_output = None if tool.output_schema is None else schema_check(tool.output_schema)
    except ValueError as exc:
        raise SourceError(f"tool {tool.name!r} of toolset {source.source_id!r}: {exc}") from None

    async def call(**args: Any) -> Any:
        output = await source.call(tool, args, current_call_context())
        if check_output is not None:
            problems = await asyncio.to_thread(check_output, output)
            if problems:
                raise ToolOutputError(f"{tool.name}: output does not match its schema: {'; '.join(problems[:3])}")
        return output

    policy = tool.policy
    return RemoteToolSpec(
        name=tool.name,
        description=tool.description,
        version=tool.digest[:12],
        func=call,
        args_model=SchemaDefinedArgs,
        output_adapter=None,
        timeout_s=backstop_timeout_s(policy.timeout_s),
        retries=None if policy.retryable else 1,
        concurrency_class=policy.concurrency_class or f"toolset:{source.source_id}",
        slow=policy.slow,
        approval=policy.approval,
        source=label or source.source_id,
        remote=tool,
        source_id=source.source_id,
        check_args=check_args,
    )


def backstop_timeout_s(timeout_s: float) -> float:
    """The scheduler's per-attempt timeout of a remote tool whose source times out at `timeout_s`."""
    return timeout_s + max(1.0, 0.1 * timeout_s)


def source_specs(source: ToolSource, *, schema_check: SchemaCheckFactory) -> list[RemoteToolSpec]:
    """A spec for every tool of the source's current snapshot."""
    return [remote_tool_spec(source, tool, schema_check=schema_check) for tool in source.snapshot().tools]


def registry_with(base: ToolRegistry, specs: Iterable[ToolSpec]) -> ToolRegistry:
    """A new registry: `base`'s tools plus `specs` (a name clash is a ValueError)."""
    registry = ToolRegistry()
    for spec in base.catalog():
        registry.add(spec)
    for spec in specs:
        registry.add(spec)
    return registry


def openai_tools_of(specs: Iterable[RemoteToolSpec]) -> list[dict[str, Any]]:
    """The specs' tools in OpenAI format with planstack's `output_schema` (what the planner takes)."""
    return [spec.remote.openai_tool() for spec in specs if spec.remote is not None]

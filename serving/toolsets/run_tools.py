"""The tools of one plan or run: the toolsets it names, the caller's own tools, the built-in steps.

`toolsets` on `/v1/plans`, the `planner` model and `/v1/runs` names the tenant's toolsets and the
reserved ones every tenant has: `builtin` (the gateway's own tools), `llm` (`llm_generate`,
`llm_extract`) and `ask_user`. `tools` on `/v1/runs` are the caller's own tools, executed by the
caller (the run pauses in `requires_action` for each call). `resolve` turns both into the catalog
the planner plans over and the record a run keeps (`RunRecord.tools`): the exact definitions, with
each toolset's id and version, so that a resumed run, or a run taken over by another replica, calls
what it was planned with even after a toolset changed. `registry_for` (the executors' `RunTools`)
builds the registry that executes a run from that record: each toolset's recorded definitions on
its live source (a deleted toolset's tools fail), the built-in tools and steps, and pausing specs
for the caller's tools and `ask_user`.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from executors.registry import ToolRegistry, ToolSpec
from executors.sources.client_tools import ASK_USER_TOOL, pausing_spec
from executors.sources.remote_spec import SchemaCheckFactory, registry_with
from executors.sources.tool_source import RemoteTool
from executors.stores import RunRecord, ToolsetKind
from serving.door import Door
from serving.door.checks import checks_inline
from serving.errors import InvalidRequestError
from serving.toolsets.checks import client_tools as checked_client_tools
from serving.toolsets.checks import output_problems
from serving.toolsets.config import ToolsConfig
from serving.toolsets.errors import InvalidClientTools, ToolNameClash
from serving.toolsets.offload import off_loop
from serving.toolsets.service import ToolsetService

Step = Literal["llm", "ask_user"]


class RecordedToolset(BaseModel):
    model_config = ConfigDict(extra="forbid")

    toolset_id: str
    name: str
    kind: ToolsetKind
    version: str
    revision: int
    tools: list[RemoteTool]


class RunToolsRecord(BaseModel):
    """What a run keeps of its tools (`RunRecord.tools`)."""

    model_config = ConfigDict(extra="forbid")

    builtin: bool = False
    toolsets: list[RecordedToolset] = []
    client: list[RemoteTool] = []
    steps: list[Step] = []


@dataclass
class ResolvedTools:
    """A plan's or run's catalog (OpenAI format, with output schemas) and what a run records of it."""

    record: RunToolsRecord
    catalog: list[dict[str, Any]] = field(default_factory=list)

    def recorded(self) -> dict[str, Any]:
        return self.record.model_dump(mode="json")


class RunToolsService:
    def __init__(
        self,
        toolsets: ToolsetService,
        builtin: ToolRegistry,
        steps: ToolRegistry,
        config: ToolsConfig,
        schema_check: SchemaCheckFactory,
        door: Door,
    ) -> None:
        self.toolsets = toolsets
        self.door = door
        self._builtin = builtin
        self._steps = steps
        self._config = config
        self._schema_check = schema_check

    async def resolve(
        self, tenant: str, names: list[str] | None, client_tools: list[dict[str, Any]] | None = None
    ) -> ResolvedTools:
        """The catalog of `names` (toolsets, reserved names included) and the caller's `client_tools`."""
        wanted = list(dict.fromkeys(names or []))
        if len(wanted) > self._config.max_toolsets_per_run:
            raise InvalidRequestError(
                f"{len(wanted)} toolsets named; the limit is {self._config.max_toolsets_per_run}", param="toolsets"
            )
        if len(client_tools or []) > self._config.max_client_tools:
            raise InvalidClientTools(f"at most {self._config.max_client_tools} tools of the caller per run")
        record = RunToolsRecord(builtin="builtin" in wanted)
        record.steps = [step for step in ("llm", "ask_user") if step in wanted]
        own = [name for name in wanted if name not in ("builtin", "llm", "ask_user")]
        for toolset in await self.toolsets.named(tenant, own):
            record.toolsets.append(
                RecordedToolset(
                    toolset_id=toolset.toolset_id,
                    name=toolset.name,
                    kind=toolset.kind,
                    version=toolset.version,
                    revision=toolset.revision,
                    tools=[RemoteTool.model_validate(tool) for tool in toolset.tools],
                )
            )
        if client_tools:  # checked by the door: on the loop when tiny, else in a worker on the tenant's share
            inline = checks_inline(pickle.dumps(client_tools, protocol=5))
            record.client = await self.door.run(
                tenant, checked_client_tools, client_tools, self._schema_check, inline=inline
            )
        resolved = ResolvedTools(record, self.catalog(record))
        names_seen: dict[str, str] = {}
        for tool in resolved.catalog:
            name = tool["function"]["name"]
            if name in names_seen:
                raise ToolNameClash(f"two tools named {name!r} in this catalog", hint="name fewer toolsets")
            names_seen[name] = name
        return resolved

    def catalog(self, record: RunToolsRecord) -> list[dict[str, Any]]:
        """The record's tools in OpenAI format, each with its output schema."""
        tools: list[dict[str, Any]] = []
        if record.builtin:
            tools += [_openai(spec) for spec in self._builtin.catalog()]
        for toolset in record.toolsets:
            tools += [tool.openai_tool() for tool in toolset.tools]
        if "llm" in record.steps:
            tools += [_openai(spec) for spec in self._steps.catalog()]
        if "ask_user" in record.steps:
            tools.append(ASK_USER_TOOL.openai_tool())
        tools += [tool.openai_tool() for tool in record.client]
        return tools

    def reserved_catalogs(self) -> dict[str, list[dict[str, Any]]]:
        """The tools of the reserved toolsets every tenant has."""
        return {
            "builtin": self.catalog(RunToolsRecord(builtin=True)),
            "llm": self.catalog(RunToolsRecord(steps=["llm"])),
            "ask_user": self.catalog(RunToolsRecord(steps=["ask_user"])),
        }

    # -- the executors' RunTools -------------------------------------------------------------------

    def catalog_for(self, record: RunRecord) -> list[dict[str, Any]]:
        return self.catalog(RunToolsRecord.model_validate(record.tools or {}))

    async def registry_for(self, record: RunRecord) -> ToolRegistry:
        tools = RunToolsRecord.model_validate(record.tools or {})
        specs: list[ToolSpec] = []
        for toolset in tools.toolsets:
            current = await self.toolsets.store.get_toolset(record.tenant, toolset.toolset_id)
            specs += await self.toolsets.connections.specs(current, toolset.toolset_id, toolset.name, toolset.tools)
        if "llm" in tools.steps:
            specs += self._steps.catalog()
        specs += await off_loop(self._pausing, tools)
        return registry_with(self._builtin if tools.builtin else ToolRegistry(), specs)

    def answered_tool(self, record: RunRecord, name: str) -> RemoteTool | None:
        """The definition of a tool the run's caller answers (its own tool, or `ask_user`)."""
        tools = RunToolsRecord.model_validate(record.tools or {})
        if name == ASK_USER_TOOL.name and "ask_user" in tools.steps:
            return ASK_USER_TOOL
        return next((tool for tool in tools.client if tool.name == name), None)

    async def check_output(self, tenant: str, tool: RemoteTool, output: Any) -> list[str]:
        """What is wrong with `output` for `tool` (its declared output schema; RE2 for its patterns), checked
        by the door: on the loop when both are tiny, else in a worker on the tenant's share."""
        if tool.output_schema is None:
            return []
        inline = checks_inline(pickle.dumps((tool.output_schema, output), protocol=5))
        return await self.door.run(
            tenant, output_problems, tool.output_schema, output, self._schema_check, inline=inline
        )

    # -- plumbing -----------------------------------------------------------------------------------

    def _pausing(self, tools: RunToolsRecord) -> list[ToolSpec]:
        specs: list[ToolSpec] = []
        if "ask_user" in tools.steps:
            specs.append(
                pausing_spec(
                    ASK_USER_TOOL,
                    pause="ask_user",
                    schema_check=self._schema_check,
                    answer_timeout_s=self._config.ask_user_timeout_s,
                )
            )
        for tool in tools.client:
            specs.append(
                pausing_spec(
                    tool,
                    pause="client",
                    schema_check=self._schema_check,
                    answer_timeout_s=self._config.answer_timeout_s,
                )
            )
        return specs


def _openai(spec: ToolSpec) -> dict[str, Any]:
    tool = spec.openai_tool()
    tool["function"]["output_schema"] = spec.output_schema
    return tool


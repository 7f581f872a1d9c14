"""What the run store keeps about tools beyond the built-in ones: each tenant's toolsets, and the answers
the calling app (or a person) gave to the tool calls a run paused for."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ToolsetKind = Literal["mcp", "openapi"]
TOOLSET_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,47}$"
TOOLSET_ID_PATTERN = r"^ts_[0-9a-f]{8,40}$"


class ToolsetRecord(BaseModel):
    """A tenant's named source of tools, with the tool definitions last listed from it.

    `config` says how to reach the source (an MCP server's URL or the name of an operator-configured
    stdio server; an OpenAPI service's base URL), its auth scheme (never the secret) and the
    operator's or tenant's policy overrides. `credential` is the secret SEALED for this tenant and
    toolset (executors.sources.credentials); it never leaves the toolset service. `tools` is the
    snapshot (`RemoteTool` definitions as JSON), `version` its digest and `revision` how many
    different snapshots the toolset has had."""

    model_config = ConfigDict(extra="forbid")

    toolset_id: str = Field(pattern=TOOLSET_ID_PATTERN)
    tenant: str
    name: str = Field(pattern=TOOLSET_NAME_PATTERN)
    kind: ToolsetKind
    config: dict[str, Any] = Field(default_factory=dict)
    credential: str | None = Field(default=None, repr=False)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    version: str = ""
    revision: int = 1
    created_at: float = 0.0
    updated_at: float = 0.0
    refreshed_at: float = 0.0


class ToolAnswer(BaseModel):
    """The answer to one tool call a run paused for: its output, or an error the caller reported, or
    the expiry of the call (`by` None). The first answer for a (round, node) is the one kept."""

    model_config = ConfigDict(extra="forbid")

    round: int
    node_id: str
    input_hash: str
    output: Any = None
    error: dict[str, Any] | None = None
    by: str | None = Field(default=None, description="Who answered: the API key's tenant; None for an expiry.")
    answered_at: float = 0.0

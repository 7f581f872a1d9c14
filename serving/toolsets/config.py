"""Settings section `tools`: where tenants' tools may connect, what a toolset may hold, and the steps a run
can hand to its caller or to the served model."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from executors.sources.egress import ClientLimits, EgressPolicy

KIB = 1024
MIB = 1024 * KIB


class StdioServer(BaseModel):
    """A local MCP server the gateway starts on demand (stdin/stdout). Only this configuration names one:
    a tenant refers to it by its key in `tools.stdio_servers`, never with a command of its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(min_length=1, description="The program (an absolute path, or a name on PATH).")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, description="Environment of the process (nothing else).")
    cwd: str | None = None
    tenants: list[str] = Field(
        default_factory=lambda: ["*"], description="Tenants that may register it ('*' = every tenant)."
    )

    def allows(self, tenant: str) -> bool:
        return "*" in self.tenants or tenant in self.tenants


class LlmStepsConfig(BaseModel):
    """`llm_generate` / `llm_extract`: the served model as a plan step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int = Field(512, ge=16, le=4096, description="Most tokens one step may generate (its own cap).")
    max_input_chars: int = Field(
        16_000, ge=256, le=200_000, description="Longest instruction + input text given to the model."
    )
    timeout_s: float = Field(120.0, gt=0, le=1800, description="Per-attempt timeout of a step.")
    slot_wait_s: float = Field(
        30.0, ge=0, description="How long a step may wait for one of its tenant's engine slots (no client waits)."
    )


class ToolsConfig(BaseModel):
    """Tenants' own tools: toolsets (MCP servers, OpenAPI services), the caller's tools, built-in steps."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    egress: EgressPolicy = Field(
        default_factory=EgressPolicy,
        description="Where toolsets may connect: hosts, CIDRs, ports, schemes, TLS (verify on by default, CA bundle). "
        "Default: nothing (no host is allowed until the operator lists some).",
    )
    client: ClientLimits = Field(
        default_factory=ClientLimits, description="One toolset's connection pool: connections, timeouts, response size."
    )
    hosts: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Names resolved from this table instead of DNS (like a hosts file); the addresses still pass "
        "the egress policy.",
    )
    stdio_servers: dict[str, StdioServer] = Field(
        default_factory=dict, description="Local MCP servers (stdio) tenants may register by name."
    )
    destructive_approval: Literal["required", "none"] = Field(
        "required",
        description="MCP tools annotated destructiveHint wait for a person's approval (`none`: the operator "
        "waives it).",
    )
    max_toolsets_per_tenant: int = Field(32, ge=1, le=1000, description="Toolsets one tenant may register.")
    max_tools_per_toolset: int = Field(64, ge=1, le=500, description="Tools one toolset may list (more: 400).")
    max_toolset_bytes: int = Field(
        2 * MIB,
        ge=KIB,
        le=64 * MIB,
        description="Largest tool definitions of one toolset (JSON); every run using it keeps a copy.",
    )
    max_toolsets_per_run: int = Field(8, ge=1, le=64, description="Toolsets one run or plan may name.")
    max_client_tools: int = Field(32, ge=1, le=128, description="Tools the caller may bring to one run.")
    max_document_bytes: int = Field(
        4 * MIB, ge=KIB, le=64 * MIB, description="Largest OpenAPI document (and toolset registration body)."
    )
    default_timeout_s: float = Field(30.0, gt=0, le=600, description="One call of a toolset's tool, unless set.")
    max_timeout_s: float = Field(300.0, gt=0, le=3600, description="Largest timeout a tenant may give a toolset.")
    connect_timeout_s: float = Field(10.0, gt=0, le=120, description="Opening an MCP session (at registration too).")
    answer_timeout_s: float = Field(
        3600.0, gt=0, le=30 * 86_400, description="How long a run waits for the caller's output of one of its tools."
    )
    ask_user_timeout_s: float = Field(
        86_400.0, gt=0, le=30 * 86_400, description="How long a run waits for a person's answer to ask_user."
    )
    llm: LlmStepsConfig = Field(default_factory=LlmStepsConfig)  # type: ignore[arg-type]
    metrics_max_sources: int = Field(
        50, ge=1, le=10_000, description="Distinct `source` labels of the tool metrics; later sources count as 'other'."
    )
    metrics_max_tools_per_source: int = Field(
        20, ge=1, le=1000, description="Distinct `tool` labels per source; later tools count as 'other'."
    )

    @field_validator("hosts")
    @classmethod
    def _bounded_hosts(cls, hosts: dict[str, list[str]]) -> dict[str, list[str]]:
        if len(hosts) > 1000 or any(len(addresses) > 16 for addresses in hosts.values()):
            raise ValueError("tools.hosts: at most 1000 names of at most 16 addresses each")
        return hosts

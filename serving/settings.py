"""Typed settings: `configs/planstack.yaml`, then environment overrides.

Precedence (highest first): environment variables (`PLANSTACK_<FIELD>`, nested with `__`, e.g.
`PLANSTACK_ENGINE__PORT=8101`), the YAML file (`PLANSTACK_CONFIG`, default `configs/planstack.yaml`
of this checkout), then the defaults below. Every field carries its documentation in `description`;
`planstack config show` prints the effective values with secrets masked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from executors.approvals import ApprovalsConfig
from executors.config import ExecutorConfig
from executors.escalations import EscalationsConfig
from executors.stores.config import RunsConfig
from executors.webhooks import WebhooksConfig
from planner.config import PlannerConfig
from retrieval.config import RetrievalConfig
from retrieval.memory_config import LearningConfig
from serving.toolsets.config import ToolsConfig

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = Path(os.environ.get("PLANSTACK_CONFIG_DIR", REPO_ROOT / "configs"))
DEFAULT_HOME = Path(os.environ.get("PLANSTACK_HOME", Path.home() / ".cache" / "planstack"))

IsolationScope = Literal["request", "session", "tenant"]
StructuredBackend = Literal["outlines", "xgrammar", "guidance"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class EngineSettings(_Section):
    profile: str = Field(
        "smollm2-cpu",
        description="Model profile: a file configs/profiles/<name>.yaml (smollm2-cpu, phi3-mini-gpu).",
    )
    host: str = Field("127.0.0.1", description="Address the vLLM engine binds to.")
    port: int = Field(8001, ge=1, le=65535, description="Port of the vLLM engine's OpenAI server.")
    model_dir: Path | None = Field(
        None, description="Override of the profile's weights folder (e.g. a local Phi-3 download)."
    )
    structured_outputs_backend: StructuredBackend = Field(
        "outlines", description="vLLM structured-output backend (server-wide): outlines, xgrammar, guidance."
    )
    grammar_compile_timeout_s: int = Field(
        30,
        gt=0,
        description="vLLM's own grammar compile timeout (VLLM_REGEX_COMPILATION_TIMEOUT_S). Kept well "
        "above the gateway's schema pre-check so that no schema the gateway admits times out there.",
    )
    startup_timeout_s: float = Field(
        600.0, gt=0, description="How long `engine start` waits for the engine's /health before giving up."
    )
    request_timeout_s: float = Field(
        120.0, gt=0, description="Gateway → engine timeout per request; past it the client gets a 504."
    )
    connect_timeout_s: float = Field(3.0, gt=0, description="Gateway → engine TCP connect timeout.")
    extra_args: list[str] = Field(
        default_factory=list, description="Extra command-line flags appended to the vLLM server command."
    )
    api_key: SecretStr | None = Field(
        None,
        description="Key the engine requires on every route but /health, known only to the gateway "
        "(env PLANSTACK_ENGINE__API_KEY). Unset: a random one is created once in <home>/engine-key (mode 0600).",
    )
    affinity_header: str = Field(
        "X-Session-ID",
        pattern=r"^([A-Za-z0-9][A-Za-z0-9-]{0,63})?$",
        description="Header carrying a hash of the request's cache salt on every engine request, so that a "
        "router with consistent hashing keeps a tenant on one engine (serving/routing.py). vllm-router "
        "hashes on X-Session-ID; empty disables the header.",
    )
    health_path: str = Field(
        "/health",
        max_length=128,
        pattern=r"^/([A-Za-z0-9_.-]+/?)*$",
        description="Path the gateway's /health probes on engine.host:engine.port. Behind vllm-router use "
        "/readiness (200 while at least one engine is healthy; its /health is 503 if any engine is down).",
    )

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


class GatewaySettings(_Section):
    host: str = Field("127.0.0.1", description="Address the gateway binds to.")
    port: int = Field(8000, ge=1, le=65535, description="Port of the gateway.")
    max_body_bytes: int = Field(1_048_576, gt=0, description="Largest request body accepted (413 above).")
    max_prompt_chars: int = Field(
        32_000,
        gt=0,
        description="Largest total text in one chat request: messages, `tools` and assistant `tool_calls` (400 above).",
    )
    max_messages: int = Field(256, gt=0, description="Most messages in one chat request.")
    max_tokens_limit: int = Field(
        2048, gt=0, description="Largest `max_tokens`/`max_completion_tokens` a client may ask for."
    )
    access_log: bool = Field(
        False, description="Log every request line (uvicorn access log); /metrics counts requests either way."
    )
    max_concurrent_upstream: int = Field(
        64,
        gt=0,
        description="Requests in flight to the engine at once (chat, planner and re-planner traffic together); "
        "past it clients get 429 + Retry-After.",
    )
    max_concurrent_upstream_per_tenant: int = Field(
        48,
        gt=0,
        description="Of those, the most one tenant may hold; past it that tenant gets 429 + Retry-After while "
        "the others still find slots. Above max_concurrent_upstream it is capped there (one tenant can then "
        "take every slot).",
    )
    replan_slot_wait_s: float = Field(
        30.0,
        ge=0,
        description="How long a run's re-planning (no client waiting on it) may wait for a free engine slot "
        "before the run fails with `replan_failed`; client requests get their 429 at once.",
    )
    metrics_token: SecretStr | None = Field(
        None,
        description="Bearer token GET /metrics requires (env PLANSTACK_GATEWAY__METRICS_TOKEN); then series carry "
        "tenant labels. Unset: /metrics is open and no series names a tenant.",
    )


class DoorSettings(_Section):
    """Checks at the door (serving/door): what is too expensive for the event loop runs in worker processes,
    a fair share per tenant, within a deadline."""

    workers: int = Field(2, ge=1, le=64, description="Worker processes for the request checks (started on first use).")
    kind: Literal["process", "thread"] = Field(
        "process",
        description="`process` (killable, at lower CPU priority: /health p99 36 ms, worst 57 ms while 4 catalogs of "
        "710 KB were validated on 2 cores) or `thread` (no start-up, but the checks hold the GIL: p99 490 ms, "
        "worst 522 ms); benchmarks/results/door_pool.md.",
    )
    per_tenant: int = Field(1, ge=1, description="Checks of one tenant running at once; its others queue behind.")
    max_waiting: int = Field(64, ge=1, description="Checks waiting for a worker at once; past it 429 + Retry-After.")
    max_waiting_per_tenant: int = Field(8, ge=1, description="Of those, at most this many of one tenant.")
    deadline_s: float = Field(
        10.0, gt=0, description="Waiting and checking together; past it 503 + Retry-After and the worker is killed."
    )
    inline_bytes: int = Field(
        65_536, ge=0, description="Request bodies up to this size are decoded on the event loop (about 1-4 ms)."
    )
    nice: int = Field(10, ge=0, le=19, description="CPU niceness of the worker processes.")
    catalog_cache_size: int = Field(
        256, ge=0, description="Verdicts on client tool catalogs kept (per tenant and content)."
    )
    catalog_cache_mib: int = Field(64, ge=1, description="Most MiB of tool definitions those verdicts hold.")
    catalog_cache_tenant_mib: int = Field(
        16, ge=1, description="Of those, most MiB one tenant's verdicts hold (its oldest go first past it)."
    )


class IsolationSettings(_Section):
    scope: IsolationScope = Field(
        "tenant",
        description="Prefix-cache isolation: `request` (fresh salt per request, no reuse), `session` "
        "(reuse within one X-Planstack-Session of one tenant), `tenant` (reuse within one tenant).",
    )
    client_salt: Literal["reject", "drop"] = Field(
        "reject", description="What to do with a client-supplied `cache_salt`: 400 (reject) or ignore (drop)."
    )


class SchemaGuardSettings(_Section):
    enabled: bool = Field(True, description="Check client `response_format` schemas before the engine sees them.")
    compile_check: bool = Field(
        True,
        description="With the outlines or xgrammar backend, compile each new client schema in a killable "
        "worker process first (as the engine would) and reject it when it does not compile in time.",
    )
    compile_timeout_s: float = Field(
        4.0,
        gt=0,
        description="Budget for the pre-check compile, in CPU seconds of the compile worker; a schema over it "
        "fails with a 400 (remembered). A compile starved of CPU is given up after 3x the budget in wall time "
        "with a 503 (not remembered).",
    )
    max_schema_bytes: int = Field(32_768, gt=0, description="Largest serialised client schema.")
    max_depth: int = Field(12, gt=0, description="Deepest nesting of a client schema.")
    max_nodes: int = Field(2_000, gt=0, description="Most sub-schemas (objects, arrays, branches) in one schema.")
    cache_size: int = Field(512, ge=0, description="Pre-check verdicts remembered, keyed by schema hash.")
    max_waiting: int = Field(
        16, gt=0, description="Requests waiting for (or in) a compile check at once; past it 429 + Retry-After."
    )
    max_waiting_per_tenant: int = Field(
        4, gt=0, description="Of those, at most this many from one tenant (one tenant cannot take the queue)."
    )
    max_index_mib: float = Field(
        48.0, gt=0, description="Largest compiled grammar index of one client schema (outlines: serialised size)."
    )
    index_budget_mib: float = Field(
        512.0,
        gt=0,
        description="Most index memory the last 128 distinct client schemas may hold in the engine (its LRU).",
    )
    tenant_index_budget_mib: float = Field(
        256.0, gt=0, description="Of that budget, at most this much held by one tenant's schemas."
    )


class ToolCallSettings(_Section):
    """Gateway-side tool calling (serving/toolcalls): grammar bounds and retries."""

    max_parallel_calls: int = Field(
        4, ge=1, le=16, description="Most tool calls in one assistant turn when parallel_tool_calls is not false."
    )
    free_string_chars: int = Field(
        48,
        ge=4,
        le=512,
        description="Token budget of one free string argument when sizing max_tokens (planner/sizing.py; strings "
        "are unbounded in the grammar: a bounded any-character field costs outlines tens of MB of index and vLLM "
        "caches 128 grammars). A longer value is cut off and re-asked once; a tool's own maxLength/pattern is "
        "enforced by validation. Raise it for tools whose string arguments are long free text.",
    )
    max_array_items: int = Field(4, ge=1, le=64, description="maxItems of an array argument without a smaller one.")
    number_max_digits: int = Field(9, ge=1, le=18, description="Digits of the integer part of a numeric argument.")
    enum_range_max: int = Field(
        64, ge=0, le=512, description="An integer argument with minimum and maximum this close is decoded as an enum."
    )
    max_argument_tokens: int = Field(
        768, ge=16, le=4096, description="Cap on the max_tokens of one call's arguments (its worst case when smaller)."
    )
    retries: int = Field(1, ge=0, le=3, description="Re-asks when a call's arguments do not validate.")


class EmbeddingSettings(_Section):
    """POST /v1/embeddings from the packaged MiniLM model (retrieval/embedder.py), run off the event loop."""

    enabled: bool = Field(True, description="Serve /v1/embeddings (and list the model in /v1/models).")
    model_id: str = Field("all-minilm-l6-v2", description="Model id clients send and /v1/models lists.")
    max_inputs: int = Field(256, ge=1, le=4096, description="Most inputs in one request.")
    max_input_chars: int = Field(8192, ge=1, description="Longest single input (characters).")
    max_total_chars: int = Field(262_144, ge=1, description="Most characters over all inputs of one request.")
    max_pending: int = Field(
        8, ge=1, description="Embedding requests waiting or running at once; past it clients get 429 + Retry-After."
    )
    max_pending_per_tenant: int = Field(
        4,
        ge=1,
        description="Of those, the most one tenant may hold (its /v1/embeddings and demonstration imports alike); "
        "past it that tenant gets 429 while the others still find room.",
    )


class UiSettings(_Section):
    """The operators' web UI under /ui/ (serving/ui)."""

    enabled: bool = Field(True, description="Serve the web UI (static files; every API call needs a key).")
    public_url: str | None = Field(
        None,
        max_length=512,
        description="Base URL operators open (e.g. behind a proxy); unset: http://gateway.host:gateway.port. "
        "`planstack run` prints run pages under it.",
    )


class Settings(BaseSettings):
    """Effective planstack configuration."""

    model_config = SettingsConfigDict(
        env_prefix="PLANSTACK_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_assignment=True,
    )

    home: Path = Field(
        DEFAULT_HOME,
        description="State folder outside the clone: venvs, prepared models, logs, secret, run store.",
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="Log level.")
    api_keys: SecretStr | None = Field(
        None,
        description="Bearer keys mapped to tenants, `key1=tenantA,key2=tenantB` (env PLANSTACK_API_KEYS). "
        "Unset: a single clearly-marked development key `planstack-dev-key` for tenant `dev`.",
    )
    secret: SecretStr | None = Field(
        None,
        description="Server secret for cache salts (env PLANSTACK_SECRET). Unset: a random one is created "
        "once in <home>/secret (mode 0600) and reused.",
    )
    engine: EngineSettings = Field(default_factory=EngineSettings)  # type: ignore[arg-type]
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)  # type: ignore[arg-type]
    isolation: IsolationSettings = Field(default_factory=IsolationSettings)  # type: ignore[arg-type]
    schema_guard: SchemaGuardSettings = Field(default_factory=SchemaGuardSettings)  # type: ignore[arg-type]
    toolcalls: ToolCallSettings = Field(default_factory=ToolCallSettings)  # type: ignore[arg-type]
    door: DoorSettings = Field(default_factory=DoorSettings)  # type: ignore[arg-type]
    embeddings: EmbeddingSettings = Field(default_factory=EmbeddingSettings)  # type: ignore[arg-type]
    planner: PlannerConfig = Field(default_factory=PlannerConfig)
    executors: ExecutorConfig = Field(default_factory=ExecutorConfig)
    runs: RunsConfig = Field(default_factory=RunsConfig)
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)
    escalations: EscalationsConfig = Field(default_factory=EscalationsConfig)
    webhooks: WebhooksConfig = Field(default_factory=WebhooksConfig)
    ui: UiSettings = Field(default_factory=UiSettings)  # type: ignore[arg-type]
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    learning: LearningConfig = Field(default_factory=LearningConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)  # type: ignore[arg-type]

    @field_validator("home", mode="after")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        yaml_path = Path(os.environ.get("PLANSTACK_CONFIG", CONFIG_DIR / "planstack.yaml"))
        yaml_source = YamlConfigSettingsSource(settings_cls, yaml_file=yaml_path if yaml_path.exists() else None)
        return (init_settings, env_settings, yaml_source)

    # ---- derived paths -------------------------------------------------------------------------
    @property
    def ui_url(self) -> str:
        """Where the web UI is: `ui.public_url`, else the gateway's own address."""
        base = self.ui.public_url or f"http://{self.gateway.host}:{self.gateway.port}"
        return base.rstrip("/") + "/ui/"

    @property
    def models_dir(self) -> Path:
        return self.home / "models"

    @property
    def run_dir(self) -> Path:
        return self.home / "run"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain data, secrets replaced by a mask."""
        data = self.model_dump(mode="json")
        for key in ("api_keys", "secret"):
            if data.get(key) is not None:
                data[key] = "********"
        if data["gateway"].get("metrics_token") is not None:
            data["gateway"]["metrics_token"] = "********"
        return data


def load_settings(**overrides: Any) -> Settings:
    """Load settings from YAML and the environment; keyword overrides win over both."""
    return Settings(**overrides)

"""Planner configuration, mounted by the gateway as `planner:` in the global settings."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO_ROOT / "configs"

DecodingStrategy = Literal["staged", "one_shot", "unconstrained"]
OptionalArgs = Literal["nullable", "omit", "optional"]
ReferenceMode = Literal["enum", "pattern"]


class GrammarConfig(BaseModel):
    """How the JSON schemas sent to the engine are shaped (see planner/grammar.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    string_max_length: int | None = Field(
        default=None,
        ge=1,
        le=200,
        description="maxLength put on free string arguments. None (default) leaves strings unbounded in "
        "the grammar: bounded strings cost outlines seconds per field to compile; rambling is bounded by "
        "max_tokens instead.",
    )
    optional_args: OptionalArgs = Field(
        default="nullable",
        description="How optional arguments appear in the grammar: 'nullable' (always emitted, null when "
        "unused; cheap to compile), 'omit' (left out: the model cannot set them), 'optional' (true JSON "
        "Schema optional properties: exponential in outlines).",
    )
    reference_mode: ReferenceMode = Field(
        default="enum",
        description="'enum': a reference is one of the `$nK.field` options of the upstream nodes' known output "
        "fields (per-request grammar); 'pattern': any `$nK.path` string (one cached grammar per tool).",
    )
    max_array_items: int = Field(default=6, ge=1, le=32, description="maxItems on array arguments.")
    string_tokens: int = Field(
        default=16, ge=2, le=200, description="Token budget per unbounded string value when sizing max_tokens."
    )


class PlannerConfig(BaseModel):
    """Everything the planner service needs besides its injected clients."""

    model_config = ConfigDict(extra="forbid")

    max_nodes: int = Field(default=6, ge=1, le=20, description="Most nodes in one plan (grammar bound and DAG check).")
    max_retries: int = Field(default=2, ge=0, le=5, description="Re-asks with the structured error after a failure.")
    demonstrations_k: int = Field(default=2, ge=0, le=8, description="Retrieved solved requests shown as examples.")
    strategy: DecodingStrategy = Field(
        default="staged",
        description="'staged': tools first (an enum list), then each node's arguments with a small per-tool "
        "grammar; 'one_shot': one whole-plan grammar (xgrammar/guidance only: does not compile in time on "
        "outlines); 'unconstrained': no grammar (baseline for benchmarks).",
    )
    grammar: GrammarConfig = Field(default_factory=GrammarConfig)
    max_tokens_cap: int = Field(
        default=512, ge=8, le=4096, description="Upper bound on the max_tokens derived from a schema's worst case."
    )
    cache_ttl_s: float = Field(default=600.0, ge=0, description="Plan cache time-to-live in seconds (0 disables).")
    cache_size: int = Field(default=1024, ge=0, description="Plan cache entries kept (LRU), over all tenants.")
    fallback_enabled: bool = Field(default=True, description="Use the rule-based planner when the model path fails.")
    today: date | None = Field(
        default=None, description="The date business rules and intent extraction treat as today (None: the real date)."
    )
    prompt_version: str = Field(default="v1", description="Suffix of the template files in configs/prompts/.")
    prompts_dir: Path = Field(default=CONFIG_DIR / "prompts", description="Folder of the prompt templates.")
    rules_path: Path = Field(default=CONFIG_DIR / "planner" / "rules.yaml", description="Business rules file.")
    fallback_rules_path: Path = Field(
        default=CONFIG_DIR / "planner" / "fallback_rules.yaml",
        description="Keyword/intent rules of the fallback planner.",
    )
    demonstrations_path: Path = Field(
        default=CONFIG_DIR / "planner" / "demonstrations.jsonl", description="Solved requests for the built-in index."
    )
    prompt_max_chars: int = Field(
        default=4800,
        ge=500,
        description="Budget for the rendered prompt (characters, ~2.9 per SmolLM2 token): the farthest "
        "demonstrations are dropped until it fits, so prompt + output stay inside the model's context "
        "(2048 tokens for SmolLM2).",
    )
    prompt_max_tools: int = Field(
        default=10,
        ge=1,
        le=128,
        description="Largest catalog shown to the model whole. Above it, the request plans over a shortlist: the "
        "tools of the retrieved demonstrations plus those whose name/description best overlap the request (the "
        "grammar and prompt then hold only the shortlist; validation still uses the whole catalog).",
    )
    request_max_chars: int = Field(default=2000, ge=1, description="Longest request text accepted.")

    def effective_today(self) -> date:
        return self.today or date.today()

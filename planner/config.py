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

    free_string_pattern: str = Field(
        default=r"^[A-Za-z0-9][A-Za-z0-9 ,.:'/&()+-]{0,31}$",
        description="Regex of a free string argument (only where the request offers no value of the argument's "
        "kind). Bounded, so every grammar has a small worst case and max_tokens never cuts a plan; a narrow "
        "character class, because outlines compile time grows with the tokens each state admits "
        '(`[^"\\\\]{1,40}` costs ~0.8 s per field, this ~0.3 s; `maxLength` would make outlines ignore the pattern).',
    )
    number_max_digits: int = Field(
        default=7, ge=1, le=15, description="Digits of a free number (written as a bounded integer)."
    )
    intent_values: bool = Field(
        default=True,
        description="Offer string/number arguments the request's own values (planner/slots.py) as an enum; "
        "a free string only for free-text kinds or when the request has no value of the kind.",
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
    skeleton_agree_score: float | None = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Reuse a retrieved demonstration's plan structure (tools + references; the model then fills "
        "only the arguments) when its tool set is exactly what the intent's goal rules call for and its "
        "similarity is at least this. None disables.",
    )
    skeleton_min_score: float | None = Field(
        default=0.42,
        ge=0,
        le=1,
        description="Reuse the nearest demonstration's plan structure whatever the goal rules say when its "
        "similarity is at least this (tuned leave-one-out on demonstrations.jsonl). None disables.",
    )
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
    slots_path: Path = Field(
        default=CONFIG_DIR / "planner" / "slots.yaml", description="Argument kinds for intent-derived value enums."
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

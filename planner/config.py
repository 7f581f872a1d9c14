"""Planner configuration, mounted by the gateway as `planner:` in the global settings.

An engine profile sets the defaults for its model (configs/profiles/*.yaml, `planner:`), merged field by
field at any depth under what the configuration file or the environment sets (`PlannerConfig.over`):
the tiny CPU model plans best with `grounding: grounded` and every stage of `stages` on, a strong GPU
model with `free` and the hints a small model needs turned off. `stages` is the one place that decides
which of the pipeline's heuristics run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO_ROOT / "configs"

DecodingStrategy = Literal["staged", "one_shot", "bare", "unconstrained"]
OptionalArgs = Literal["nullable", "omit", "optional"]
Grounding = Literal["strict", "grounded", "hybrid", "free"]
ToolChoice = Literal["model", "proposal"]


class GrammarConfig(BaseModel):
    """How the JSON schemas sent to the engine are shaped (see planner/grammar.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    free_string_tokens: int = Field(
        default=24,
        ge=2,
        le=400,
        description="Token budget of one free string when sizing max_tokens (planner/sizing.py). Free strings are "
        "not bounded in the grammar: in outlines a bounded repetition of any character costs tens of MB of token "
        "index per field and vLLM caches 128 grammars, where an unbounded JSON string costs well under 1 MB. A "
        "value longer than its budget is cut off and the attempt retried with stricter grounding; a tool's own "
        "maxLength is enforced by validation. Raise it when arguments are long free text (each node's max_tokens "
        "grows with it, and so does the time a model that rambles can spend).",
    )
    number_max_digits: int = Field(default=9, ge=1, le=15, description="Digits of a free integer.")
    candidates_per_arg: int = Field(
        default=10, ge=0, le=50, description="Request values offered to one argument (best ranked first)."
    )
    optional_args: OptionalArgs = Field(
        default="nullable",
        description="How optional arguments appear in the grammar: 'nullable' (always emitted, null when unused; "
        "cheap to compile), 'omit' (left out: the model cannot set them), 'optional' (true JSON-Schema optional "
        "properties: exponential in outlines).",
    )
    reference_fields: bool = Field(
        default=True,
        description="Offer `$nK.field` references for the fields of upstream tools that declare an output schema "
        "(`$nK`, the whole output, is offered wherever its declared type fits the argument's).",
    )
    max_array_items: int = Field(default=6, ge=1, le=32, description="maxItems on array arguments.")
    max_depth: int = Field(default=3, ge=1, le=6, description="Nesting of object arguments written field by field.")


class SelectionConfig(BaseModel):
    """Tool shortlist and step proposals by embedding similarity (planner/selection.py).

    Thresholds are cosine similarities of the packaged MiniLM; how they were chosen is in
    benchmarks/results/planner.md (tuned on the demonstration pool of the split only, never on scored items).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_min: float = Field(default=0.2, ge=-1, le=1, description="A step gets a tool proposed at this similarity.")
    repeat_margin: float = Field(
        default=0.15, ge=0, le=2, description="A tool already proposed yields to a runner-up within this margin."
    )
    connective_lead: float = Field(
        default=0.1,
        ge=0,
        le=2,
        description="A step a sequencing connective opens ('…, then comment on it') gets its best tool below "
        "step_min when that tool reaches no_fit_below and leads the runner-up by this much. 0: off.",
    )
    consumer_margin: float = Field(
        default=0.1,
        ge=0,
        le=2,
        description="A step whose best tool is a lookup asks instead for a tool within this margin that takes the "
        "lookup's output and more of the step's values (the lookup stays before it where it feeds an optional "
        "argument the step names). 0: off.",
    )
    repeat_mask: bool = Field(
        default=True,
        description="A step proposed a tool an earlier step has is re-scored without the words it shares with "
        "those steps (it may only name their result); another tool that fits the rest by repeat_mask_margin wins, "
        "and a verbless step left with a repeat joins the step before it. Turn it off for catalogs where one tool "
        "is meant to run several times in a row.",
    )
    repeat_mask_margin: float = Field(default=0.0, ge=-2, le=2, description="See repeat_mask.")
    prerequisites: bool = Field(
        default=True, description="Propose the tool whose outputs a proposed tool's required arguments need."
    )
    prerequisite_identifiers: tuple[str, ...] = Field(
        default=("_name", "_id"),
        max_length=8,
        description="Argument name endings of identifiers (a `stylist_name`, a `car_id`): one required identifier "
        "that another tool outputs is enough to propose that tool first (a lookup). Add the endings your catalog's "
        "identifiers use (`_code`, `_key`). Empty: only the majority rule (a tool whose required arguments are "
        "mostly another tool's outputs).",
    )
    embed_without: frozenset[str] = Field(
        default=frozenset(
            {"quoted", "filename", "email", "url", "phone", "date", "datetime", "time", "number", "expression"}
            | {"coordinates"}
        ),
        description="Value kinds (planner/values.py) left out of the request and its steps where they are compared "
        "with the tools' texts: a value says which parameter takes it (the value-kind fit), not which tool the "
        "request asks for. Empty: the request as written.",
    )
    no_fit_below: float = Field(
        default=0.12,
        ge=-1,
        le=1,
        description="When no tool reaches this similarity with the request or any of its steps, the answer is "
        "'no tool fits' (no plan) without calling the model.",
    )


class PipelineStages(BaseModel):
    """The pipeline's heuristics, each a stage an engine profile turns on or off. A small model needs
    them all; a strong one reads the request, the catalog and its examples itself (Phi-3 profile)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_hints: bool = Field(default=True, description="Show the model the proposed tool of each step.")
    proposal_line: bool = Field(
        default=True, description="Show the whole proposed sequence when it differs from the steps' tools."
    )
    drafts: bool = Field(
        default=True, description="Show the model a drafted argument object per node (planner/drafting.py)."
    )
    pack_intent: bool = Field(default=True, description="Show the applicable packs' structured intent.")
    skeletons: bool = Field(
        default=True,
        description="Reuse a retrieved demonstration's plan structure (tools and references; thresholds "
        "`skeleton_agree_score`, `skeleton_min_score`).",
    )
    learned_refs: bool = Field(
        default=True,
        description="Data flow learned from demonstrations (planner/dataflow.py; thresholds `learned_refs_*`).",
    )
    evidence: bool = Field(
        default=True,
        description="Arguments by evidence (planner/evidence.py): an optional argument is in the grammar only "
        "when the request or an earlier output supplies its value; dates in the declared format, identifiers "
        "never a name, enums and flags mapped from the request's words.",
    )
    defaults: bool = Field(
        default=False,
        description="With `evidence`: an optional argument the request says nothing about is written with its "
        "schema `default` (off: left out, so the service applies that default itself; on: the convention of "
        "data sets whose gold plans spell defaults out, such as NESTFUL's).",
    )
    lookups: bool = Field(
        default=True,
        description="A required identifier the request only names gets the lookup that returns it first "
        "(planner/prerequisites.py); the argument then takes only that output.",
    )
    needs_input: bool = Field(
        default=True,
        description="A required value nothing can fill, or a value the request gives that a business rule "
        "refuses, is a `needs_input` answer listing them (never an invented value).",
    )
    value_transfer: bool = Field(
        default=True,
        description="A skeleton's literal values are refilled from the new request by where they came from "
        "in the demonstration's (planner/transfer.py), and its structure decides which arguments are written.",
    )


class PlannerConfig(BaseModel):
    """Everything the planner service needs besides its injected clients."""

    model_config = ConfigDict(extra="forbid")

    max_nodes: int = Field(default=6, ge=1, le=20, description="Most nodes in one plan (grammar bound and DAG check).")
    max_retries: int = Field(default=2, ge=0, le=5, description="Re-asks after a failure, each changing its cause.")
    demonstrations_k: int = Field(default=2, ge=0, le=8, description="Retrieved solved requests shown as examples.")
    demonstrations_foreign: bool = Field(
        default=True,
        description="Also show demonstrations whose tools are not all in the request's catalog, as examples of the "
        "format (never as skeletons): a new catalog has no history of its own.",
    )
    strategy: DecodingStrategy = Field(
        default="staged",
        description="'staged': tools first (an enum list), then each node's arguments with a small per-tool "
        "grammar; 'one_shot': one whole-plan grammar (xgrammar/guidance only: does not compile in time on "
        "outlines); 'bare': one call under a bare plan grammar (tool names, any JSON arguments) and "
        "'unconstrained': no grammar (both baselines for benchmarks).",
    )
    grounding: Grounding = Field(
        default="grounded",
        description="How strongly values found in the request are preferred (planner/value_grammar.py): 'grounded' "
        "(an enum; other values only through an explicit {\"other\": ...}), 'hybrid' (the enum next to free "
        "values), 'free' (the schema's values only; candidates are shown in the prompt). 'strict' (request values "
        "only where the request has any) is what a repair uses after a cut-off answer; not a mode to configure.",
    )
    tool_choice: ToolChoice = Field(
        default="proposal",
        description="'model': the model writes the tool sequence (stage 1) with the proposal as a hint; 'proposal': "
        "the embedding proposal of planner/selection.py is the sequence and the model writes the arguments. "
        "'model' suits models that choose tools well (configs/profiles/phi3-mini-gpu.yaml); 'proposal' suits small "
        "ones that do not (README, Planner: why SmolLM2-135M uses it).",
    )
    stages: PipelineStages = Field(default_factory=PipelineStages)
    grammar: GrammarConfig = Field(default_factory=GrammarConfig)
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    packs: list[str] = Field(
        default_factory=lambda: ["travel"],
        description="Domain packs available (planner/packs/); a pack applies only to requests whose catalog "
        "contains its tools.",
    )
    skeleton_agree_proposal: bool = Field(
        default=True,
        description="When no applicable pack has an opinion on the tools a request needs (a tenant's own tools), a "
        "demonstration agrees when its tool set is the embedding proposal's (planner/selection.py), so its "
        "structure may be reused (skeleton_agree_score). Off: only a pack's goal rules make a demonstration agree.",
    )
    skeleton_agree_score: float | None = Field(
        default=0.35,
        ge=-1,
        le=1,
        description="Reuse a retrieved demonstration's plan structure (the model then fills only the arguments) "
        "when its tool set is exactly what is expected (an applicable pack's goal rules, else the proposal) and "
        "its MiniLM cosine similarity is at least this. Lower reuses more structures; calibrate it on your own "
        "demonstrations with `python -m benchmarks.planner_bench calibrate --engine-url URL` (README, Demonstration "
        "memory: how the default was chosen). None disables.",
    )
    learned_refs_min_count: int | None = Field(
        default=1,
        ge=1,
        le=1000,
        description="Data flow learned from demonstrations (planner/dataflow.py): an argument that the nearest "
        "demonstrations filled with an earlier node's output at least this many times, and at least "
        "`learned_refs_min_rate` of the times they gave it, is offered only references when its node follows "
        "another (unless the request writes a value right after its name). Higher asks for more evidence before "
        "narrowing an argument; calibrate it with `python -m benchmarks.planner_bench calibrate-refs`. None "
        "disables (a model that reads the data flow from its examples needs no narrowing).",
    )
    learned_refs_min_rate: float = Field(
        default=0.75,
        gt=0,
        le=1,
        description="Share of an argument's demonstrated values that were references (see learned_refs_min_count).",
    )
    learned_refs_fetch: int = Field(
        default=64,
        ge=0,
        le=256,
        description="Demonstrations per source (the tenant's memory, each pack) the data flow is learned from, "
        "nearest first. 0 disables.",
    )
    skeleton_min_score: float | None = Field(
        default=0.85,
        ge=-1,
        le=1,
        description="Reuse the nearest demonstration's plan structure whatever is expected when its cosine "
        "similarity is at least this: near-repeats of a solved request, e.g. a tenant's corrected plan. Keep it "
        "high: such a structure is copied on similarity alone, even when it does not agree with the expected "
        "tools. None disables.",
    )
    skeleton_repeat_score: float | None = Field(
        default=0.97,
        ge=-1,
        le=1,
        description="With `value_transfer`: reuse the structure of a demonstration whose request, its values "
        "masked (planner/transfer.py), is this close to the request's (MiniLM cosine of the templates), "
        "whatever is expected: the same request with other values ('flights from A to B', then 'from C to "
        "D'), where the quoted values alone can make the requests as written look far apart. Chosen on the "
        "realistic set's dev half: the nearest two of its requests over one catalog whose gold tools differ "
        "have templates at 0.895, 'Refund <number> of payment <number>' and 'Capture <number> on payment "
        "<number>' 0.94; 93 of its 95 retellings (benchmarks/retell.py) are at 1.0. None disables.",
    )
    max_tokens_cap: int = Field(
        default=512, ge=8, le=4096, description="Upper bound on the max_tokens derived from a schema's worst case."
    )
    cache_ttl_s: float = Field(default=600.0, ge=0, description="Plan cache time-to-live in seconds (0 disables).")
    cache_size: int = Field(default=1024, ge=0, description="Plan cache entries kept (LRU), over all tenants.")
    fallback_enabled: bool = Field(
        default=True, description="Plan with rules (a pack's, else the embedding proposal) when the model path fails."
    )
    today: date | None = Field(
        default=None, description="The date relative dates are resolved against (None: the real date)."
    )
    prompt_version: str = Field(default="v2", description="Suffix of the template files in configs/prompts/.")
    prompts_dir: Path = Field(default=CONFIG_DIR / "prompts", description="Folder of the prompt templates.")
    prompt_max_chars: int = Field(
        default=4800,
        ge=500,
        description="Budget for the whole staged conversation (characters, ~2.9 per SmolLM2 token): the "
        "prompt plus ~650 characters per expected node turn; the farthest demonstrations are dropped until it "
        "fits, so prompt + output stay inside the model's context (2048 tokens for SmolLM2). An engine that still "
        "says the prompt is too long gets the next attempt without demonstrations. Scale it with the model's "
        "context length (the Phi-3 profile's 4k context: 9000).",
    )
    prompt_max_tools: int = Field(
        default=8,
        ge=1,
        le=128,
        description="Largest catalog shown to the model whole; above it the request plans over an embedding "
        "shortlist of this many tools (validation still uses the whole catalog).",
    )
    request_max_chars: int = Field(default=2000, ge=1, description="Longest request text accepted.")

    def effective_today(self) -> date:
        return self.today or date.today()

    def over(self, defaults: Mapping[str, Any]) -> PlannerConfig:
        """This configuration over `defaults` (an engine profile's `planner:` section): a field set here —
        in the configuration file or the environment — wins, at any depth (`stages.drafts` set here keeps
        the profile's other stages); every other field takes the default. ValidationError on a bad one."""
        return PlannerConfig.model_validate(_merged(self, defaults))

    def fingerprint(self) -> str:
        """Hash of everything that can change a plan (part of the plan cache key)."""
        text = self.model_dump_json(exclude={"cache_ttl_s", "cache_size", "today"})
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _merged(model: BaseModel, defaults: Mapping[str, Any]) -> dict[str, Any]:
    out = model.model_dump()
    for key, value in defaults.items():
        current = getattr(model, key, None)
        if isinstance(current, BaseModel) and isinstance(value, Mapping):
            out[key] = _merged(current, value)
        elif key not in model.model_fields_set:
            out[key] = value
    return out

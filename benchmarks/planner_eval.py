"""Planner accuracy on external data it was not tuned on (NESTFUL), with the baselines in the same run.

For each NESTFUL file (or any data/spec pair in the same format, `--data`/`--spec`):

- a template-disjoint split (benchmarks/splits.py): the `pool` may be seen (demonstrations, the
  thresholds in planner/config.py were chosen on pools only), the `scored` half is what is reported;
- each scored request plans over 6 candidate tools: its own plus seeded distractors from its spec
  file, passed as OpenAI `tools` exactly as a client of `/v1/plans` would;
- variants, same items, same engine, one run: the planner zero-shot (no demonstrations), with
  cross-domain demonstrations (the other file's pool), with in-domain disjoint demonstrations (this
  file's pool); baselines: unconstrained decoding, a bare one-shot JSON grammar, copy the nearest
  in-domain demonstration, and the planner's own rule-based proposal without the model.

The realistic set over real REST APIs (benchmarks/apis.py, `--sets apis`) comes as two sets: `apis-dev`
(examples and nearest copies from the rest of dev, leave-one-out) and `apis-scored` (examples from dev);
each request plans over its own 6 fixed candidates, and its gold may be a plan, "no plan" or "needs input".

Accuracy of the model path counts only plans the model produced (path model/model_retry) or the
planner's own no-plan / needs-input answers; plans from the rule-based fallback are reported separately
as "final incl. fallback". Plan metrics are over the requests whose gold is a plan; answer correctness
and the filler rate come beside them (benchmarks/metrics.py `evaluate`). Also reported: the share of
gold literal values the grammar can produce (reachability ceiling), gold-tool recall@k of the embedding
shortlist over the whole spec file, mean predicted vs gold plan length, and per-plan latency
breakdown (engine calls, node calls answered without the engine because their grammar admitted one
value only, time to first token — grammar compile + prefill —, decode).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import jsonschema

from benchmarks import apis, metrics, nestful, splits
from contract.demonstrations import Demonstration, DemonstrationSource
from contract.plan import Plan, parse_reference
from planner.catalog import ToolCatalog
from planner.config import Grounding, PlannerConfig
from planner.demos import EmbeddingDemonstrations
from planner.fallback import FallbackError, proposal_plan
from planner.grammar import SchemaBuilder
from planner.llm import PlannerLLM
from planner.selection import ToolSelector
from planner.service import PlanningFailed
from planner.similarity import CachedEmbedder
from planner.upstream import Upstream
from planner.value_grammar import ValueContext
from planner.values import extract
from serving.stack import build_planner

TODAY = date(2026, 12, 1)
CANDIDATES = 6
MODEL_PATHS = ("model", "model_retry")
ANSWER_PATHS = ("no_plan", "needs_input")  # the planner's own answers that are not a plan


@dataclass(frozen=True)
class EvalCase:
    id: str
    request: str
    gold: Plan
    tools: list[dict[str, Any]]  # the candidate catalog (OpenAI format)
    expect: str = "plan"  # "plan" | "no_plan" | "needs_input"
    needs_input: tuple[str, ...] = ()


@dataclass
class EvalSet:
    name: str
    pool: list[EvalCase]
    scored: list[EvalCase]
    all_tools: list[dict[str, Any]]
    split: dict[str, Any]
    family: str = "nestful"  # demonstrations "from another file" come from another family
    leave_one_out: bool = False  # the pool holds the scored requests themselves (never shown their own)


def load_set(name: str, data: Path, spec: Path, *, seed: int, limit: int | None) -> EvalSet:
    tools = nestful.load_tools(name, path=spec)
    raw = nestful.load_cases(name, path=data)
    split = splits.template_disjoint_split(raw, lambda c: c.plan, seed=seed)
    problems = splits.check_disjoint(split, lambda c: c.plan)
    if problems:
        raise RuntimeError(f"split of {name} is not disjoint: {problems[:3]}")

    def case(c: nestful.NestfulCase) -> EvalCase:
        gold = Plan.model_validate(c.plan)
        candidates = splits.candidate_tools([n.tool for n in gold.nodes], tools, size=CANDIDATES, key=c.id)
        return EvalCase(c.id, c.request, gold, candidates)

    scored = [case(c) for c in split.scored][: limit or None]
    return EvalSet(name, [case(c) for c in split.pool], scored, tools, split.describe())


def load_apis_sets(*, limit: int | None) -> list[EvalSet]:
    """The realistic set's two halves (raises benchmarks.apis.DocumentsMissing without the documents)."""
    tools = apis.api_tools()

    def case(c: apis.ApiCase) -> EvalCase:
        return EvalCase(
            c.id, c.request, Plan.model_validate(c.plan), apis.candidate_tools(c, tools), c.expect, c.needs_input
        )

    dev = [case(c) for c in apis.load_cases("dev")]
    scored = [case(c) for c in apis.load_cases("scored")]
    rule = "template-disjoint halves written with the set (benchmarks/datasets/apis/README.md)"

    def split(pool: int, n: int) -> dict[str, Any]:
        return {"pool": pool, "scored": n, "rule": rule}

    every = [t for api in tools.values() for t in api]
    return [
        EvalSet("apis-dev", dev, dev[: limit or None], every, split(len(dev), len(dev)), "apis", leave_one_out=True),
        EvalSet("apis-scored", dev, scored[: limit or None], every, split(len(dev), len(scored)), "apis"),
    ]


def pool_demos(cases: Sequence[EvalCase]) -> list[Demonstration]:
    return [Demonstration(c.request, c.gold.model_dump(exclude_none=True)) for c in cases]


class LeaveOneOut:
    """A pool as a demonstration source that never returns the request being planned."""

    def __init__(self, demos: Sequence[Demonstration], embedder: CachedEmbedder) -> None:
        self.inner = EmbeddingDemonstrations(demos, embedder)

    def search(self, request: str, k: int, *, tenant: str | None) -> list[Demonstration]:
        return [d for d in self.inner.search(request, k + 1, tenant=tenant) if d.request != request][:k]


# ---------------------------------------------------------------------------------------------
# model variants
# ---------------------------------------------------------------------------------------------
async def run_planner(
    label: str,
    cases: Sequence[EvalCase],
    config: PlannerConfig,
    llm: PlannerLLM,
    embedder: CachedEmbedder,
    demos: Sequence[Demonstration] = (),
    progress: str = "",
    source: DemonstrationSource | None = None,
) -> dict[str, Any]:
    """`source` replaces `demos` (e.g. a leave-one-out view of a pool). The embedding model is loaded
    before the first timed request: its one-off load (seconds) is a gateway's start, not a plan's latency."""
    await asyncio.to_thread(embedder.embed, ["load the embedding model"])
    source = source or (EmbeddingDemonstrations(demos, embedder) if demos else None)
    catalog = ToolCatalog.from_openai(cases[0].tools)
    service = build_planner(config, llm=llm, catalog=catalog, demos=source, embedder=embedder)
    rows: list[dict[str, Any]] = []
    for i, case in enumerate(cases, 1):
        print(f"\r{progress} {label}: {i}/{len(cases)}", end="", flush=True)
        start = time.perf_counter()
        try:
            result = await service.plan(case.request, tenant="bench", cache_salt="bench", tools=case.tools)
            plan, path, attempts, reason = (
                result.plan,
                result.path,
                result.attempts,
                result.reason or result.fallback_reason,
            )
        except PlanningFailed as exc:
            plan, path, attempts, reason = None, "failed", exc.attempts, exc.reason
        latency = time.perf_counter() - start
        calls = [t for a in attempts for t in a.call_timings]
        rows.append(
            {
                "id": case.id,
                "path": path,
                "reason": reason,
                "latency_s": round(latency, 3),
                "calls": len(calls),
                "forced": sum(a.forced for a in attempts),
                "ttft_s": round(sum(c["ttft_s"] or 0.0 for c in calls), 3),
                "decode_s": round(sum(c["latency_s"] - (c["ttft_s"] or 0.0) for c in calls), 3),
                "completion_tokens": sum(c["completion_tokens"] for c in calls),
                "tools_from": attempts[0].tools_from if attempts else None,
                "first_error_layer": attempts[0].error_layer if attempts else None,
                "model": _score(plan if path in MODEL_PATHS else None, case, path if path in ANSWER_PATHS else ""),
                "final": _score(plan, case, path),
                "nodes": len(plan.nodes) if plan is not None else 0,
                "gold_nodes": len(case.gold.nodes),
                "plan": plan.model_dump(exclude_none=True) if plan is not None else None,
                "schemas": [c["schema"] for c in calls if c["schema"] is not None],
            }
        )
    print(flush=True)
    return summarise(label, rows)


def _score(plan: Plan | None, case: EvalCase, path: str = "") -> dict[str, float]:
    required = metrics.required_arguments(case.tools)
    return metrics.evaluate(plan, case.gold, path=path, expect=case.expect, required=required)


def summarise(label: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    paths: dict[str, int] = {}
    for row in rows:
        paths[row["path"]] = paths.get(row["path"], 0) + 1
    latencies = sorted(r["latency_s"] for r in rows)
    mean = _mean_dict
    return {
        "variant": label,
        "n": n,
        "paths": paths,
        "model_valid_rate": round(sum(paths.get(p, 0) for p in (*MODEL_PATHS, *ANSWER_PATHS)) / n, 3) if n else None,
        "valid_rate_incl_fallback": round(sum(1 for r in rows if r["plan"] is not None) / n, 3) if n else None,
        "model_path": mean([r["model"] for r in rows]),
        "final_incl_fallback": mean([r["final"] for r in rows]),
        "nodes_mean": round(statistics.fmean(r["nodes"] for r in rows), 2) if n else None,
        "gold_nodes_mean": round(statistics.fmean(r["gold_nodes"] for r in rows), 2) if n else None,
        "latency_p50_s": _percentile(latencies, 0.5),
        "latency_p95_s": _percentile(latencies, 0.95),
        "calls_mean": round(statistics.fmean(r.get("calls", 0) for r in rows), 2) if n else None,
        "forced_mean": round(statistics.fmean(r.get("forced", 0) for r in rows), 2) if n else None,
        "ttft_mean_s": round(statistics.fmean(r.get("ttft_s", 0.0) for r in rows), 3) if n else None,
        "decode_mean_s": round(statistics.fmean(r.get("decode_s", 0.0) for r in rows), 3) if n else None,
        "completion_tokens_mean": round(statistics.fmean(r.get("completion_tokens", 0) for r in rows), 1)
        if n
        else None,
        "rows": rows,
    }


def _mean_dict(scores: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each metric over the rows that have it, the filler counts pooled into `filler_rate`."""
    return metrics.aggregate(scores)


def _percentile(ordered: Sequence[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 3)


# ---------------------------------------------------------------------------------------------
# baselines without the model
# ---------------------------------------------------------------------------------------------
async def nearest_copy(
    cases: Sequence[EvalCase], pool: Sequence[EvalCase], embedder: CachedEmbedder, *, leave_one_out: bool = False
) -> dict[str, Any]:
    demos = pool_demos(pool)
    index = LeaveOneOut(demos, embedder) if leave_one_out else EmbeddingDemonstrations(demos, embedder)
    rows = []
    for case in cases:
        found = index.search(case.request, 1, tenant=None)
        plan = Plan.model_validate(found[0].plan) if found else None
        rows.append(_static_row(case, plan, "copy"))
    which = "the nearest other dev request" if leave_one_out else "the nearest in-domain demonstration"
    return summarise(f"baseline: copy {which} (no model)", rows)


async def proposal_only(cases: Sequence[EvalCase], config: PlannerConfig, embedder: CachedEmbedder) -> dict[str, Any]:
    selector = ToolSelector(embedder, config.selection)
    rows = []
    for case in cases:
        catalog = ToolCatalog.from_openai(case.tools)
        selection = await selector.select(case.request, catalog, limit=config.prompt_max_tools)
        plan: Plan | None = None
        if selection.no_fit:  # the planner answers "no plan" here without calling the model
            rows.append(_static_row(case, None, "no_plan"))
            continue
        try:
            values = extract(case.request, TODAY)
            plan = proposal_plan(
                selection, values, catalog, max_nodes=config.max_nodes, defaults=config.stages.defaults
            )
        except FallbackError:
            plan = None
        rows.append(_static_row(case, plan, "fallback"))
    return summarise("baseline: the planner's rule-based proposal alone (no model)", rows)


def _static_row(case: EvalCase, plan: Plan | None, path: str) -> dict[str, Any]:
    path = path if plan is not None or path in ANSWER_PATHS else "none"
    score = _score(plan, case, path)
    return {
        "id": case.id,
        "path": path,
        "latency_s": 0.0,
        "model": score,
        "final": score,
        "nodes": len(plan.nodes) if plan is not None else 0,
        "gold_nodes": len(case.gold.nodes),
        "plan": plan.model_dump(exclude_none=True) if plan is not None else None,
    }


# ---------------------------------------------------------------------------------------------
# grammar reachability and shortlist recall (offline)
# ---------------------------------------------------------------------------------------------
def reachability(cases: Sequence[EvalCase], config: PlannerConfig, grounding: Grounding) -> dict[str, Any]:
    """Share of gold literal argument values (and of gold references) that the node grammar, built as the
    planner builds it for that request and the gold tool order, can produce."""
    builder = SchemaBuilder(config.grammar, config.max_nodes)
    literal = literal_ok = refs = refs_ok = valid = valid_ok = 0
    misses: list[dict[str, Any]] = []
    for case in cases:
        catalog = ToolCatalog.from_openai(case.tools)
        values = extract(case.request, TODAY)
        upstream: list[Upstream] = []
        for node in case.gold.nodes:
            if node.tool not in catalog:  # a few NESTFUL gold calls name tools their spec file lacks
                literal += len(node.args)
                continue
            tool = catalog.get(node.tool)
            schema = builder.args_schema(
                tool, ValueContext(grounding=grounding, values=values, upstream=list(upstream))
            )
            for arg, value in node.args.items():
                sub = schema["properties"].get(arg)
                is_ref = parse_reference(value) is not None
                ok = sub is not None and _accepts(sub, value)
                if is_ref:
                    refs, refs_ok = refs + 1, refs_ok + int(ok)
                else:
                    literal, literal_ok = literal + 1, literal_ok + int(ok)
                    if arg in tool.properties and _valid(tool.properties[arg], value):
                        valid, valid_ok = valid + 1, valid_ok + int(ok)
                    if not ok and len(misses) < 25:
                        misses.append({"case": case.id, "tool": node.tool, "arg": arg, "gold": value})
            upstream.append(Upstream(node.id, tool))
    return {
        "grounding": grounding,
        "literal_values": literal,
        "literal_reachable": round(literal_ok / literal, 4) if literal else None,
        "schema_valid_literal_values": valid,
        "schema_valid_literal_reachable": round(valid_ok / valid, 4) if valid else None,
        "references": refs,
        "references_reachable": round(refs_ok / refs, 4) if refs else None,
        "misses": misses,
    }


def _valid(schema: dict[str, Any], value: Any) -> bool:
    try:
        jsonschema.validate(value, schema)
        return True
    except (jsonschema.ValidationError, jsonschema.SchemaError):
        return False


def _accepts(schema: dict[str, Any], value: Any) -> bool:
    """Whether the (outlines-flavoured) value grammar accepts `value`, as is or written the way the grammar
    writes it: `{"other": v}` (the grounded detour) or `{"ref": r}` (a reference in free/hybrid modes)."""
    forms = [value, {"other": value}]
    if parse_reference(value) is not None:
        forms.append({"ref": value})
    for form in forms:
        try:
            jsonschema.validate(form, schema)
            return True
        except jsonschema.ValidationError:
            continue
    return _accepts_nested_other(schema, value)


def _accepts_nested_other(schema: dict[str, Any], value: Any) -> bool:
    """Arrays/objects whose items each take the grounded detour."""
    if isinstance(value, list):
        return _accepts(schema, [{"other": v} for v in value]) if value and not isinstance(value[0], dict) else False
    return False


async def shortlist_recall(
    name: str,
    all_tools: list[dict[str, Any]],
    cases: Sequence[nestful.NestfulCase],
    embedder: CachedEmbedder,
    config: PlannerConfig,
    ks: Sequence[int] = (4, 6, 8, 10),
) -> dict[str, Any]:
    catalog = ToolCatalog.from_openai(all_tools)
    selector = ToolSelector(embedder, config.selection)
    hits = {k: 0.0 for k in ks}
    for case in cases:
        gold = {n["tool"] for n in case.plan["nodes"]}
        selection = await selector.select(case.request, catalog, limit=max(ks))
        ranked = sorted(selection.scores, key=lambda t: -selection.scores[t])
        for k in ks:
            hits[k] += len(gold & set(ranked[:k])) / len(gold)
    return {
        "catalog": name,
        "tools": len(catalog),
        "requests": len(cases),
        **{f"recall@{k}": round(hits[k] / len(cases), 4) for k in ks},
    }

"""`bench accuracy`: requests with gold plans through the planner and the baselines, side by side.

Per data set and variant (`planner`: the production pipeline; `unconstrained`: same prompt, no
grammar, one attempt, no fallback; `nn_copy`: the nearest example's plan, no model) every request is
planned, scored with benchmarks.metrics and — on the demo domain — executed on the demo tools.

Model and fallback are never mixed: the headline metrics of a variant count only plans of its primary
path (model/model_retry/cache, or copy) over ALL n requests (any other request scores 0); fallback
plans are scored on their own (`fallback_only`), and `final` gives what users get (all plans).
Where a data set's gold can also be "no plan" or "needs input" (the realistic set), the plan metrics
are means over the requests whose gold is a plan, and the answer metrics (`answer_correct`,
`no_plan_correct`, `needs_input_correct`) and the filler rate come beside them (benchmarks/metrics.py);
a no-plan or needs-input answer is the planner's own answer, so it counts on the primary path.
Online mode (benchmarks/harness/online.py) reuses `run_dataset` and `online_windows` with feedback sent
between requests.
"""

from __future__ import annotations

import contextlib
import statistics
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks import metrics
from benchmarks.harness.datasets import Case, Dataset
from benchmarks.harness.execution import EXEC_ZERO, PlanExecutor
from benchmarks.harness.planners import PRIMARY_PATHS, Outcome, PlanSource
from benchmarks.harness.stats import summarize

PLAN_KEYS = ("schema_valid", "node_f1", "edge_f1", "arg_name_f1", "arg_value_acc", "full_match")
ANSWER_KEYS = (*metrics.ANSWER_KEYS, "filler_rate")
ANSWER_PATHS = frozenset({"no_plan", "needs_input"})  # the planner's answers that are not a plan
EXEC_KEYS = ("exec_success", "exec_expected", "node_success", "expected_data")
HEADLINE = ("schema_valid", "node_f1", "edge_f1", "arg_name_f1", "arg_value_acc", "full_match", "exec_success")
Tick = Callable[[str], None]


@dataclass
class Row:
    case: Case
    outcome: Outcome
    primary: dict[str, float]  # scores counting only the variant's primary path (0 otherwise)
    final: dict[str, float]  # scores of whatever plan came out (fallback included)
    index_size: int = 0

    def as_dict(self) -> dict[str, Any]:
        o = self.outcome
        return {
            "id": self.case.id,
            "size": self.case.size,
            "path": o.path,
            "latency_s": round(o.latency_s, 4),
            "completion_tokens": o.completion_tokens,
            "attempts": o.attempts,
            "error": o.error,
            "index_size": self.index_size,
            "scores": self.final,
            "plan": o.plan.model_dump(exclude_none=True) if o.plan is not None else None,
        }


async def score_outcome(
    case: Case,
    outcome: Outcome,
    executor: PlanExecutor | None,
    required: Mapping[str, frozenset[str]] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """(scores of the variant's own path, scores of whatever came out); `required` (tool → required
    arguments of the catalog the case planned over) adds the filler counts."""
    final = metrics.evaluate(outcome.plan, case.gold, path=outcome.path, expect=case.expect, required=required)
    if executor is not None and case.expect == "plan":
        final.update((await executor.score(case.request, outcome.plan, case.gold)).as_dict())
    if outcome.path in PRIMARY_PATHS or outcome.path in ANSWER_PATHS:
        return final, final
    zero = metrics.evaluate(None, case.gold, expect=case.expect, required=required)
    if executor is not None and case.expect == "plan":
        zero.update(EXEC_ZERO.as_dict())
    return zero, final


async def run_dataset(
    dataset: Dataset,
    sources: Mapping[str, PlanSource],
    *,
    executor: PlanExecutor | None,
    on_scored: Callable[[Case], Awaitable[None] | None] | None = None,
    index_size: Callable[[], int] | None = None,
    tick: Tick | None = None,
    tools_of: Callable[[Case], list[dict[str, Any]] | None] | None = None,
) -> dict[str, list[Row]]:
    """Every case through every source, case by case (so online mode can grow the index in between);
    `tools_of` gives the catalog a case plans over (for the filler counts; default: the case's own or
    the data set's tools, else the demo catalog)."""
    rows: dict[str, list[Row]] = {name: [] for name in sources}
    for case in dataset.cases:
        size = index_size() if index_size else 0
        tools = tools_of(case) if tools_of is not None else case.tools or dataset.tools
        required = metrics.required_arguments(tools) if tools is not None else demo_required()
        for name, source in sources.items():
            outcome = await source.plan(case)
            primary, final = await score_outcome(case, outcome, executor, required)
            rows[name].append(Row(case, outcome, primary, final, size))
            if tick:
                tick(name)
        if on_scored and (learned := on_scored(case)) is not None:
            await learned  # online mode: feedback is sent before the next request
    return rows


def demo_required() -> dict[str, frozenset[str]]:
    """Required arguments of the demo domain's tools (what a case without its own catalog plans over)."""
    from serving.stack import demo_catalog

    return {tool.name: frozenset(tool.required) for tool in demo_catalog()}


def _mean(rows: Sequence[Row], attr: str, keys: Sequence[str]) -> dict[str, float]:
    """Each key's mean over the rows that have it (a plan metric is absent where the gold is no plan),
    plus the pooled filler rate (metrics.aggregate)."""
    if not rows:
        return {}
    pooled = metrics.aggregate([getattr(r, attr) for r in rows])
    return {k: pooled[k] for k in (*keys, *ANSWER_KEYS) if k in pooled}


def summarize_variant(rows: Sequence[Row]) -> dict[str, Any]:
    """Flat numbers (for repeats and compare) plus paths, per-path means and latency."""
    n = len(rows)
    paths = Counter(r.outcome.path for r in rows)
    keys = [k for k in (*PLAN_KEYS, *EXEC_KEYS) if any(k in r.final for r in rows)]
    fallback = [r for r in rows if r.outcome.path == "fallback"]
    flat: dict[str, Any] = {
        "n": n,
        "primary_share": round(sum(paths[p] for p in PRIMARY_PATHS) / n, 4) if n else 0.0,
        "fallback_share": round(len(fallback) / n, 4) if n else 0.0,
        "failed_share": round(sum(v for p, v in paths.items() if p not in PRIMARY_PATHS and p != "fallback") / n, 4)
        if n
        else 0.0,
        **_mean(rows, "primary", keys),
    }
    latency = summarize([r.outcome.latency_s for r in rows])
    flat.update({"latency_p50_s": latency["p50"], "latency_p95_s": latency["p95"]})
    flat["completion_tokens_mean"] = round(statistics.fmean(r.outcome.completion_tokens for r in rows), 1) if n else 0
    if fallback:
        flat.update({f"fallback_only.{k}": v for k, v in _mean(fallback, "final", keys).items()})
        flat.update({f"final.{k}": v for k, v in _mean(rows, "final", keys).items()})
    by_path = {
        p: {"n": len(sel), **_mean(sel, "final", keys)}
        for p in paths
        for sel in [[r for r in rows if r.outcome.path == p]]
    }
    return {"flat": flat, "paths": dict(paths), "by_path": by_path, "latency": latency}


def by_plan_size(rows: Sequence[Row]) -> dict[str, dict[str, float]]:
    """Primary-path means per gold plan size (1, 2, 3, 4+ nodes)."""
    buckets: dict[str, list[Row]] = {}
    for row in rows:
        buckets.setdefault(str(row.case.size) if row.case.size < 4 else "4+", []).append(row)
    keys = [k for k in HEADLINE if any(k in r.primary for r in rows)]
    return {size: {"n": len(sel), **_mean(sel, "primary", keys)} for size, sel in sorted(buckets.items())}


def online_windows(rows: Sequence[Row], window: int) -> list[dict[str, Any]]:
    """Primary-path means over consecutive windows of requests, with the index size at each start."""
    keys = [
        k
        for k in ("node_f1", "edge_f1", "arg_value_acc", "full_match", "exec_success")
        if any(k in r.primary for r in rows)
    ]
    out = []
    for start in range(0, len(rows), window):
        sel = rows[start : start + window]
        out.append(
            {
                "requests": f"{start + 1}-{start + len(sel)}",
                "index_size": sel[0].index_size,
                "n": len(sel),
                **_mean(sel, "primary", keys),
            }
        )
    return out


def dataset_result(rows: Mapping[str, Sequence[Row]], *, online_window: int | None) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, variant_rows in rows.items():
        entry = summarize_variant(variant_rows)
        entry["by_size"] = by_plan_size(variant_rows)
        if online_window:
            entry["online"] = online_windows(variant_rows, online_window)
        entry["rows"] = [r.as_dict() for r in variant_rows]
        result[name] = entry
    return result


# ---------------------------------------------------------------------------------------------
# One whole accuracy run: sources built per data set, repeats, online mode
# ---------------------------------------------------------------------------------------------
def own_tools(case: Case) -> list[dict[str, Any]] | None:
    """The case's own candidate catalog (per-case data sets)."""
    return case.tools


@dataclass
class AccuracyConfig:
    engine_url: str | None
    gateway_url: str | None
    api_key: str | None
    model: str | None
    variants: tuple[str, ...] = ("planner", "unconstrained", "nn_copy")
    online: bool = False
    window: int = 10
    repeat: int = 1
    timeout_s: float = 300.0


async def run_accuracy(
    config: AccuracyConfig, datasets: Sequence[Dataset], store_dir: Any, progress: Any
) -> dict[str, Any]:
    """Runs `config.repeat` times over every data set; returns {"runs": [...], "summary": {...}, "skipped": {...}}."""
    import httpx

    from benchmarks.harness.datasets import all_cases_of, load_demonstrations
    from benchmarks.harness.demos import ExampleIndex
    from benchmarks.harness.planners import GatewayPlanner, NearestCopy, ServicePlanner, build_service
    from benchmarks.harness.stats import across_repeats
    from serving.engine.process import existing_engine_key
    from serving.settings import load_settings
    from serving.stack import planner_config_of, planner_embedder, standalone_planner_llm

    if config.online:
        raise ValueError("online mode runs through benchmarks.harness.online.online_report")
    settings = load_settings()
    base = planner_config_of(settings)  # as the gateway plans: the profile's defaults under the settings
    vectors = planner_embedder(settings) if config.engine_url else None  # and with its MiniLM
    skipped: dict[str, str] = {}
    runs: list[dict[str, Any]] = []
    async with contextlib.AsyncExitStack() as clients:
        http = await clients.enter_async_context(httpx.AsyncClient(timeout=config.timeout_s))
        llm = (
            await clients.enter_async_context(
                standalone_planner_llm(
                    config.engine_url,
                    config.model or "",
                    timeout_s=config.timeout_s,
                    api_key=existing_engine_key(load_settings()),  # the engine's key, if it was started here
                )
            )
            if config.engine_url
            else None
        )
        for repeat in range(config.repeat):
            run: dict[str, Any] = {}
            for dataset in datasets:
                if dataset.demos_path is not None:
                    index = ExampleIndex(load_demonstrations(dataset.demos_path))
                elif dataset.demonstrations is not None:
                    index = ExampleIndex(dataset.demonstrations)
                else:
                    index = ExampleIndex(
                        [(c.request, c.gold.model_dump()) for c in all_cases_of(dataset)], leave_one_out=True
                    )
                sources: dict[str, PlanSource] = {}
                for variant in config.variants:
                    if variant == "nn_copy":
                        sources[variant] = NearestCopy(index)
                    elif llm is not None:
                        service = build_service(base, dataset, variant, llm, index, vectors)
                        sources[variant] = ServicePlanner(service, tools=own_tools if dataset.per_case_tools else None)
                    elif variant == "planner" and config.gateway_url:
                        catalog = own_tools if dataset.per_case_tools else dataset.tools
                        sources[variant] = GatewayPlanner(http, config.gateway_url, config.api_key, catalog)
                    else:
                        skipped[variant] = "needs --engine-url (an in-process planner over the engine)"
                executor = PlanExecutor(store_dir) if dataset.executable else None
                label = f"[{repeat + 1}/{config.repeat}] {dataset.name}"
                task = progress.add_task(label, total=len(dataset.cases) * len(sources))

                def tick(_: str, task: Any = task) -> None:
                    progress.advance(task)

                rows = await run_dataset(dataset, sources, executor=executor, index_size=index.__len__, tick=tick)
                run[dataset.name] = dataset_result(rows, online_window=None)
                run[dataset.name]["example_index"] = {"backend": index.backend, "size_at_start": len(index)}
            runs.append(run)
    summary = {
        name: {
            variant: across_repeats([r[name][variant]["flat"] for r in runs])
            for variant in runs[0][name]
            if variant != "example_index"
        }
        for name in runs[0]
    }
    return {"runs": runs, "summary": summary, "skipped": skipped}

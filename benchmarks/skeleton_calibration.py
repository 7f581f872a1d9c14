"""Calibration of the skeleton thresholds (`skeleton_agree_score`, `skeleton_min_score` in planner/config.py).

A skeleton is a retrieved demonstration whose structure — tools and references — the planner copies,
letting the model write only the arguments. Copying pays when the structure is right (the references
come for free: the 135M model's own references are its weakest part) and costs when it is wrong. The
planner takes (planner.demos.choose_skeleton) the nearest usable demonstration that *agrees* — its tool
set is what the request is expected to need: the applicable packs' goal rules, else the embedding
proposal (`skeleton_agree_proposal`) — when its cosine similarity reaches `skeleton_agree_score`, else
the nearest usable one when it reaches `skeleton_min_score`. Both are cosines of the packaged MiniLM,
chosen here on data the planner may see, never on a scored half:

- the POOLS of the template-disjoint NESTFUL splits (benchmarks/splits.py, planner_eval.load_set),
  leave-one-out inside each pool: every pool item plans over its 6 candidate tools and the rest of its
  pool is the tenant's history (a memory: same-template siblings included);
- the travel pack's own demonstrations (the travel domain's pool), leave-one-out, with the pack's
  goal rules.

A skeleton's node and edge F1 are known without the engine (the model only fills its arguments). What
the planner does *without* one is measured with `--engine-url`: the planner on every NESTFUL pool item,
skeletons off, the rest of the pool as its examples (leave-one-out; cached in `--cache`). For every pair
of thresholds the report gives, per pool, how many items get a skeleton, its precision (share whose
copied structure is exactly the gold one: node F1 = edge F1 = 1) and, on NESTFUL, the measured mean of
node and edge F1 over all items (skeleton where one is taken, the measured plan elsewhere). The chosen
pair has the best NESTFUL measure among the pairs whose precision is at least `precision` (default 0.9)
on both pools (without the engine: the most NESTFUL skeletons); `choose` says how ties are broken. The
travel model branch is not measured (its examples would include the item itself: the pack's
demonstrations are the pool), so travel constrains precision and breaks ties.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks import metrics, nestful, planner_eval
from benchmarks.harness.planners import patiently
from contract.demonstrations import Demonstration
from contract.plan import Plan
from planner.catalog import ToolCatalog
from planner.config import CONFIG_DIR, PlannerConfig
from planner.demos import EmbeddingDemonstrations, load_demonstrations, usable
from planner.packs import DomainPack, load_packs
from planner.selection import ToolSelector
from planner.similarity import CachedEmbedder

GRID = tuple(round(0.2 + 0.05 * i, 2) for i in range(16))  # 0.20 … 0.95
OFF = 2.0  # a threshold no cosine reaches: the rule is off
FETCH = 8  # what the planner fetches per source for k = 2 (max(8, 4k))


@dataclass(frozen=True)
class Option:
    """A skeleton candidate: its cosine and how its structure scores against the gold plan."""

    score: float
    node_f1: float
    edge_f1: float

    @property
    def exact(self) -> bool:
        return self.node_f1 == 1.0 and self.edge_f1 == 1.0


@dataclass(frozen=True)
class Item:
    id: str
    domain: str  # "nestful" | "travel"
    nearest: Option | None  # the nearest usable demonstration
    agreeing: Option | None  # the nearest usable one whose tool set is the expected one
    model: dict[str, float] | None = None  # the planner's own plan without a skeleton (engine), its scores

    def skeleton(self, agree: float, minimum: float) -> Option | None:
        """What planner.demos.choose_skeleton takes at these thresholds."""
        if self.agreeing is not None and self.agreeing.score >= agree:
            return self.agreeing
        if self.nearest is not None and self.nearest.score >= minimum:
            return self.nearest
        return None


def _option(demo: Demonstration | None, gold: Plan) -> Option | None:
    if demo is None:
        return None
    scores = metrics.score(Plan.model_validate(demo.plan), gold)
    return Option(demo.score, scores.node_f1, scores.edge_f1)


async def leave_one_out_items(
    domain: str,
    cases: Sequence[planner_eval.EvalCase],
    embedder: CachedEmbedder,
    config: PlannerConfig,
    pack: DomainPack | None = None,
) -> list[Item]:
    """Per item: the nearest usable and the nearest agreeing demonstration among the rest of the pool."""
    selector = ToolSelector(embedder, config.selection)
    items = []
    for i, case in enumerate(cases):
        others = planner_eval.pool_demos([c for j, c in enumerate(cases) if j != i])
        catalog = ToolCatalog.from_openai(case.tools)
        own = usable(EmbeddingDemonstrations(others, embedder).search(case.request, FETCH, tenant=None), catalog)
        expected = pack.expected_tools(case.request, catalog, planner_eval.TODAY) if pack is not None else set()
        if not expected and config.skeleton_agree_proposal:
            expected = set((await selector.select(case.request, catalog, limit=config.prompt_max_tools)).sequence)
        agreeing = next((d for d in own if expected and set(d.tools()) == expected), None)
        items.append(Item(case.id, domain, _option(own[0] if own else None, case.gold), _option(agreeing, case.gold)))
    return items


def travel_pool() -> list[planner_eval.EvalCase]:
    """The travel pack's demonstrations as pool items over the demo catalog."""
    from serving.stack import demo_catalog

    tools = [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in demo_catalog()
    ]
    demos = load_demonstrations(CONFIG_DIR / "packs" / "travel" / "demonstrations.jsonl")
    return [
        planner_eval.EvalCase(f"travel-{i:03d}", d.request, Plan.model_validate(d.plan), tools)
        for i, d in enumerate(demos)
    ]


LeaveOneOut = planner_eval.LeaveOneOut  # the pool as a demonstration source without the request itself


async def model_without_skeleton(
    cases: Sequence[planner_eval.EvalCase],
    config: PlannerConfig,
    llm: Any,
    embedder: CachedEmbedder,
    label: str,
    cache: Path | None = None,
) -> dict[str, dict[str, float]]:
    """Per item: the planner's plan with skeletons off and the rest of the pool as examples (model path).
    Items already in `cache` (a JSON file, written after every item) are not planned again."""
    off = config.model_copy(
        update={"skeleton_min_score": None, "skeleton_agree_score": None, "skeleton_repeat_score": None}
    )
    source = LeaveOneOut(planner_eval.pool_demos(cases), embedder)
    done: dict[str, dict[str, float]] = json.loads(cache.read_text()) if cache is not None and cache.exists() else {}
    for i, case in enumerate(cases, 1):
        if case.id in done:
            continue

        def one(case: planner_eval.EvalCase = case, tag: str = f"{label} {i}/{len(cases)}") -> Awaitable[Any]:
            return planner_eval.run_planner("no skeleton", [case], off, llm, embedder, progress=tag, source=source)

        result = await patiently(one)
        done[case.id] = result["rows"][0]["model"]
        if cache is not None:
            cache.write_text(json.dumps(done))
    return {case.id: done[case.id] for case in cases}


def evaluate(items: Sequence[Item], agree: float, minimum: float) -> dict[str, Any]:
    """Skeletons taken, their precision and structure F1, and the measured policy (when measured)."""
    taken = [(item, item.skeleton(agree, minimum)) for item in items]
    chosen = [option for _, option in taken if option is not None]
    measured = all(item.model is not None for item, option in taken if option is None)
    policy = []
    for item, option in taken:
        if option is not None:
            policy.append((option.node_f1 + option.edge_f1) / 2)
        elif item.model is not None:
            policy.append((item.model["node_f1"] + item.model["edge_f1"]) / 2)
    return {
        "skeletons": len(chosen),
        "precision": round(sum(o.exact for o in chosen) / len(chosen), 3) if chosen else None,
        "skeleton_node_f1": _mean([o.node_f1 for o in chosen]),
        "skeleton_edge_f1": _mean([o.edge_f1 for o in chosen]),
        "policy_structure_f1": round(statistics.fmean(policy), 4) if measured and policy else None,
    }


def sweep(pools: dict[str, list[Item]], precision: float) -> list[dict[str, Any]]:
    rows = []
    for agree in (*GRID, OFF):
        for minimum in (*GRID, OFF):
            cells = {name: evaluate(items, agree, minimum) for name, items in pools.items()}
            ok = all(c["precision"] is None or c["precision"] >= precision for c in cells.values())
            rows.append({"agree": agree, "min": minimum, "ok": ok, **cells})
    return rows


def choose(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Among the pairs keeping precision on both pools: the best measured NESTFUL policy (4 decimals; without
    the engine, the most NESTFUL skeletons), then the most exact minus inexact travel skeletons, then both
    rules on, then the highest agree threshold (agreement carries the evidence: stay conservative) and
    the lowest min threshold (the min rule is for near-repeats, e.g. a tenant's corrected plan)."""
    valid = [r for r in rows if r["ok"]]
    measured = all(r["nestful"]["policy_structure_f1"] is not None for r in valid)

    def key(r: dict[str, Any]) -> tuple[float, ...]:
        nest, travel = r["nestful"], r["travel"]
        first = round(nest["policy_structure_f1"], 4) if measured else nest["skeletons"]
        exact = round((travel["precision"] or 0.0) * travel["skeletons"])
        both_on = float(r["agree"] < OFF and r["min"] < OFF)
        return (first, exact - (travel["skeletons"] - exact), both_on, r["agree"], -r["min"])

    return max(valid, key=key)


def _cells(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for k, v in row.items() if isinstance(v, dict)]


async def calibrate(
    sets: Sequence[str],
    root: Path,
    *,
    seed: int,
    precision: float,
    embedder: CachedEmbedder,
    llm: Any = None,
    config: PlannerConfig | None = None,
    cache: Path | None = None,
) -> dict[str, Any]:
    """`llm` (the planner's engine client) measures the no-skeleton branch; `cache` keeps what it measured."""
    config = (config or PlannerConfig()).model_copy(update={"today": planner_eval.TODAY, "cache_ttl_s": 0.0})
    nestful_items: list[Item] = []
    splits_used = {}
    for name in sets:
        data = planner_eval.load_set(
            name, nestful.data_path(name, root), nestful.spec_path(name, root), seed=seed, limit=None
        )
        found = await leave_one_out_items("nestful", data.pool, embedder, config)
        if llm is not None:
            measured = await model_without_skeleton(data.pool, config, llm, embedder, name, cache)
            found = [replace(item, model=measured.get(item.id)) for item in found]
        nestful_items += found
        splits_used[name] = {"pool": len(data.pool), **data.split}
    pack = next(p for p in load_packs(["travel"]) if p.name == "travel")
    travel_items = await leave_one_out_items("travel", travel_pool(), embedder, config, pack)
    rows = sweep({"nestful": nestful_items, "travel": travel_items}, precision)
    best = choose(rows)
    previous = next(r for r in rows if r["agree"] == 0.45 and r["min"] == 0.8)
    return {
        "kind": "skeleton_calibration",
        "engine": llm is not None,
        "precision_target": precision,
        "agree_proposal": config.skeleton_agree_proposal,
        "splits": splits_used,
        "items": {"nestful": len(nestful_items), "travel": len(travel_items)},
        "chosen": best,
        "previous": previous,
        "sweep": rows,
        "no_skeleton_measured": _mean_scores([i.model for i in nestful_items if i.model is not None]),
        "candidates": [
            item.__dict__ | {"nearest": _d(item.nearest), "agreeing": _d(item.agreeing)}
            for item in [*nestful_items, *travel_items]
        ],
    }


def _d(option: Option | None) -> dict[str, float] | None:
    return None if option is None else dict(option.__dict__)


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 3) if values else None


def _mean_scores(scores: Sequence[dict[str, float]]) -> dict[str, Any]:
    return {"n": len(scores), **{k: _mean([s[k] for s in scores]) for k in ("node_f1", "edge_f1")}} if scores else {}


def calibration_markdown(report: dict[str, Any]) -> str:
    chosen, previous = report["chosen"], report["previous"]
    engine = "--engine-url URL` (the no-skeleton branch planned on the engine" if report["engine"] else "` (no engine"
    lines = [
        "# Skeleton thresholds: calibration on the pools",
        "",
        f"`python -m benchmarks.planner_bench calibrate {engine}; packaged MiniLM cosine). Items: "
        f"{report['items']['nestful']} NESTFUL pool items (leave-one-out, 6 candidate tools each) and "
        f"{report['items']['travel']} travel pack demonstrations (leave-one-out). A demonstration *agrees* when "
        "its tool set is what the pack's goal rules expect, else (no pack opinion) the embedding proposal's. "
        f"Constraint: skeleton precision ≥ {report['precision_target']} on both pools (exact structure: node F1 = "
        "edge F1 = 1); objective: the NESTFUL mean of (node F1 + edge F1)/2 over all items, the skeleton where "
        "one is taken and the planner's measured plan elsewhere; ties: most exact minus inexact travel skeletons, "
        "both rules on, the highest agree and the lowest min threshold. Scored halves are never read.",
        "",
        f"**Chosen: `skeleton_agree_score` {_t(chosen['agree'])}, `skeleton_min_score` {_t(chosen['min'])}** "
        f"(previous defaults {_t(previous['agree'])} / {_t(previous['min'])}).",
        "",
    ]
    if report.get("no_skeleton_measured"):
        m = report["no_skeleton_measured"]
        lines += [
            f"The planner without any skeleton on the {m['n']} NESTFUL pool items (pool examples, leave-one-out, "
            f"model path): node F1 {m['node_f1']}, edge F1 {m['edge_f1']}.",
            "",
        ]
    header = (
        "| agree | min | NESTFUL skeletons | precision | node F1 | edge F1 | measured (node+edge)/2, all items "
        "| travel skeletons | precision | node F1 | edge F1 |"
    )
    lines += [header, "|---" * 11 + "|"]
    rows = report["sweep"]
    shown = [r for r in rows if r["min"] == OFF] + [r for r in rows if r["agree"] == OFF and r["min"] != OFF]
    shown += [r for r in rows if (r["agree"], r["min"]) in ((chosen["agree"], chosen["min"]), (0.45, 0.8))]
    seen: set[tuple[float, float]] = set()
    for r in shown:
        if (r["agree"], r["min"]) in seen:
            continue
        seen.add((r["agree"], r["min"]))
        n, t = r["nestful"], r["travel"]
        cells = [_t(r["agree"]), _t(r["min"]), n["skeletons"], n["precision"], n["skeleton_node_f1"]]
        cells += [n["skeleton_edge_f1"], n["policy_structure_f1"], t["skeletons"], t["precision"]]
        cells += [t["skeleton_node_f1"], t["skeleton_edge_f1"]]
        mark = " **(chosen)**" if (r["agree"], r["min"]) == (chosen["agree"], chosen["min"]) else ""
        lines.append("| " + " | ".join("–" if c is None else str(c) for c in cells) + f" |{mark}")
    lines += [
        "",
        "Rows: each rule alone (the other off), then the chosen and the previous pair; all pairs are in the JSON.",
        "",
    ]
    for name, split in report["splits"].items():
        lines.append(f"- {name}: pool of {split['pool']} ({split['rule']}, seed {split['seed']})")
    return "\n".join(lines) + "\n"


def _t(value: float) -> str:
    return "off" if value >= OFF else str(value)

"""Calibration of the learned data-flow rule (`learned_refs_*` in planner/config.py), on the pools only.

The rule (planner/dataflow.py) turns an argument into "references only" when the nearest
demonstrations kept filling it with an earlier node's output. Right, it writes an edge the 135M model
often misses (it copies a phrase of the request instead); wrong, it makes the correct literal
undecodable. Both are known without the engine, argument by argument on the gold plans:

- items: the POOLS of the template-disjoint NESTFUL splits (benchmarks/splits.py, planner_eval.load_set),
  each over its 6 candidate tools, leave-one-out (the rest of the pool is the tenant's history, nearest
  `fetch` first, as the planner fetches), and the travel pack's demonstrations (leave-one-out);
- per gold node after the first and per argument of its tool: the rule *forces* it or not (the request
  writing a definite value after the argument's name keeps the literal, as in the planner; here over the
  whole request, the planner looks inside the node's step only, so the planner forces a little more);
- precision: forced arguments whose gold value is a reference, over forced arguments the gold plan
  gives (a forced argument the gold plan leaves out is counted on its own: the grammar then asks for a
  reference where none is needed); recall: forced references over all gold references after node 1.

The chosen rule has the highest NESTFUL recall among those with precision ≥ `precision` (default 0.85)
on both pools and at most `omitted` (default 0.15) forced-but-omitted arguments per forced argument;
ties: higher precision, then the smaller fetch. Scored halves are never read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import nestful, planner_eval
from benchmarks.skeleton_calibration import travel_pool
from contract.demonstrations import Demonstration
from contract.plan import iter_references
from planner.catalog import ToolCatalog
from planner.dataflow import ArgHistory, LearnedRule, learn_references
from planner.demos import EmbeddingDemonstrations
from planner.drafting import cued
from planner.similarity import CachedEmbedder
from planner.values import extract

COUNTS = (1, 2, 3, 4, 6)
RATES = (0.5, 0.6, 0.75, 0.9, 1.0)
FETCHES = (8, 16, 32, 64)


@dataclass(frozen=True)
class Decision:
    """One argument of one gold node after the first: what its history was and what gold wrote."""

    item: str
    refs: int
    literals: int
    gold: str  # "ref" | "literal" | "omitted"
    cued: bool


def decisions(cases: Sequence[planner_eval.EvalCase], embedder: CachedEmbedder, fetch: int) -> list[Decision]:
    out: list[Decision] = []
    for i, case in enumerate(cases):
        others = planner_eval.pool_demos([c for j, c in enumerate(cases) if j != i])
        nearest: list[Demonstration] = EmbeddingDemonstrations(others, embedder).search(
            case.request, fetch, tenant=None
        )
        catalog = ToolCatalog.from_openai(case.tools)
        histories = learn_references(nearest, catalog)
        values = extract(case.request, planner_eval.TODAY)
        for node in case.gold.nodes[1:]:
            if node.tool not in catalog:
                continue
            for arg in catalog.get(node.tool).arg_names():
                history = histories.get((node.tool, arg))
                value = node.args.get(arg)
                gold = "omitted" if arg not in node.args else ("ref" if any(iter_references(value)) else "literal")
                out.append(
                    Decision(
                        case.id,
                        history.refs if history else 0,
                        history.literals if history else 0,
                        gold,
                        cued(values, arg, None),
                    )
                )
    return out


def evaluate(rows: Sequence[Decision], rule: LearnedRule) -> dict[str, Any]:
    forced = [r for r in rows if not r.cued and rule.applies(ArgHistory(r.refs, r.literals))]
    hits = sum(r.gold == "ref" for r in forced)
    wrong = sum(r.gold == "literal" for r in forced)
    omitted = sum(r.gold == "omitted" for r in forced)
    refs = sum(r.gold == "ref" for r in rows)
    return {
        "forced": len(forced),
        "hits": hits,
        "literal_lost": wrong,
        "omitted": omitted,
        "precision": round(hits / (hits + wrong), 3) if hits + wrong else None,
        "omitted_share": round(omitted / len(forced), 3) if forced else 0.0,
        "recall": round(hits / refs, 3) if refs else 0.0,
        "gold_refs": refs,
    }


def calibrate(
    sets: Sequence[str],
    root: Path,
    *,
    seed: int,
    precision: float,
    omitted: float,
    embedder: CachedEmbedder,
) -> dict[str, Any]:
    pools = {name: planner_eval.load_set(
        name, nestful.data_path(name, root), nestful.spec_path(name, root), seed=seed, limit=None
    ) for name in sets}  # fmt: skip
    travel = travel_pool()
    sweep: list[dict[str, Any]] = []
    for fetch in FETCHES:
        nestful_rows = [d for data in pools.values() for d in decisions(data.pool, embedder, fetch)]
        travel_rows = decisions(travel, embedder, fetch)
        for count in COUNTS:
            for rate in RATES:
                rule = LearnedRule(count, rate)
                sweep.append(
                    {
                        "fetch": fetch,
                        "min_count": count,
                        "min_rate": rate,
                        "nestful": evaluate(nestful_rows, rule),
                        "travel": evaluate(travel_rows, rule),
                    }
                )

    def ok(row: dict[str, Any]) -> bool:
        return (
            all(
                (row[p]["precision"] is None or row[p]["precision"] >= precision) and row[p]["omitted_share"] <= omitted
                for p in ("nestful", "travel")
            )
            and row["nestful"]["forced"] > 0
        )

    eligible = [r for r in sweep if ok(r)]
    chosen = max(
        eligible,
        key=lambda r: (r["nestful"]["recall"], r["nestful"]["precision"] or 0.0, -r["fetch"]),
        default=None,
    )
    return {
        "kind": "reference_calibration",
        "precision_target": precision,
        "omitted_target": omitted,
        "splits": {name: {"pool": len(data.pool), **data.split} for name, data in pools.items()},
        "items": {"nestful": sum(len(d.pool) for d in pools.values()), "travel": len(travel)},
        "chosen": chosen,
        "sweep": sweep,
    }


def calibration_markdown(report: dict[str, Any]) -> str:
    chosen = report["chosen"]
    lines = [
        "# Learned data flow: calibration on the pools",
        "",
        "`python -m benchmarks.planner_bench calibrate-refs` (no engine; packaged MiniLM cosine for the nearest "
        f"demonstrations). Items: {report['items']['nestful']} NESTFUL pool items (leave-one-out, 6 candidate "
        f"tools each) and {report['items']['travel']} travel pack demonstrations (leave-one-out). Each argument "
        "of each gold node after the first is one decision. Constraint: precision (forced arguments whose gold "
        f"value is a reference, of the forced ones gold gives) ≥ {report['precision_target']} on both pools, "
        f"forced arguments gold leaves out ≤ {report['omitted_target']} of the forced; objective: NESTFUL "
        "recall (forced references / all gold references after node 1). Scored halves are never read.",
        "",
    ]
    if chosen is None:
        lines += ["**No rule met the constraints: the rule stays off.**", ""]
    else:
        lines += [
            f"**Chosen: `learned_refs_fetch` {chosen['fetch']}, `learned_refs_min_count` {chosen['min_count']}, "
            f"`learned_refs_min_rate` {chosen['min_rate']}**: NESTFUL recall {chosen['nestful']['recall']} "
            f"({chosen['nestful']['hits']} of {chosen['nestful']['gold_refs']} references), precision "
            f"{chosen['nestful']['precision']}; travel precision {chosen['travel']['precision']} "
            f"({chosen['travel']['forced']} forced).",
            "",
        ]
    lines += [
        "| fetch | min count | min rate | NESTFUL forced | hits | literals lost | omitted | precision | recall "
        "| travel forced | precision | recall |",
        "|---" * 12 + "|",
    ]
    for r in report["sweep"]:
        if r["min_rate"] not in (0.5, 0.75, 1.0):
            continue
        n, t = r["nestful"], r["travel"]
        cells = [r["fetch"], r["min_count"], r["min_rate"], n["forced"], n["hits"], n["literal_lost"], n["omitted"]]
        cells += [n["precision"], n["recall"], t["forced"], t["precision"], t["recall"]]
        mark = " **(chosen)**" if chosen is not None and r == chosen else ""
        lines.append("| " + " | ".join("–" if c is None else str(c) for c in cells) + f" |{mark}")
    lines += ["", "Rows with min rate 0.5, 0.75 and 1.0; every rule is in the JSON.", ""]
    for name, split in report["splits"].items():
        lines.append(f"- {name}: pool of {split['pool']} ({split['rule']}, seed {split['seed']})")
    return "\n".join(lines) + "\n"

"""Executed-plan success on gold plans, model/fallback separation, baselines and the online mode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.accuracy import by_plan_size, online_windows, run_dataset, summarize_variant
from benchmarks.harness.datasets import TRAVEL, Case, Dataset, load_jsonl
from benchmarks.harness.demos import ExampleIndex
from benchmarks.harness.execution import PlanExecutor, node_success_share
from benchmarks.harness.planners import NearestCopy, Outcome
from contract.plan import Plan


def travel(*ids: str) -> list[Case]:
    cases = {c.id: c for c in load_jsonl(TRAVEL).cases}
    return [cases[i] for i in ids]


def with_args(plan: Plan, node: str, **args: Any) -> Plan:
    data = plan.model_dump()
    for n in data["nodes"]:
        if n["id"] == node:
            n["args"].update(args)
    return Plan.model_validate(data)


def test_gold_plans_execute_successfully(tmp_path: Path) -> None:
    executor = PlanExecutor(tmp_path)

    async def scores() -> list[dict[str, float]]:
        return [
            (await executor.score(c.request, c.gold, c.gold)).as_dict() for c in travel("tm-001", "tm-007", "tm-008")
        ]

    for s in asyncio.run(scores()):  # 1, 3 (references) and 4 nodes (review of a budget check)
        assert s == {"node_success": 1.0, "exec_success": 1.0, "expected_data": 1.0, "exec_expected": 1.0}


def test_wrong_values_run_but_do_not_return_the_expected_data(tmp_path: Path) -> None:
    executor = PlanExecutor(tmp_path)
    (case,) = travel("tm-007")
    other_city = with_args(case.gold, "n2", city="Hangzhou")  # runs fine, wrong hotel data
    broken = with_args(case.gold, "n1", date="not a date")  # n1 fails, n3 depends on it

    async def scores() -> tuple[Any, Any, Any]:
        return (
            await executor.score(case.request, other_city, case.gold),
            await executor.score(case.request, broken, case.gold),
            await executor.score(case.request, None, case.gold),
        )

    city, bad, missing = asyncio.run(scores())
    assert (
        city.exec_success == 1.0 and city.expected_data == pytest.approx(1 / 3, abs=1e-3) and city.exec_expected == 0.0
    )
    assert bad.node_success < 0.9 and bad.exec_success == 0.0
    assert missing.as_dict() == dict.fromkeys(missing.as_dict(), 0.0)
    assert node_success_share(Plan(), []) == 0.0


class Scripted:
    """A plan source answering from a script: case id → (plan or None, path)."""

    def __init__(self, script: dict[str, tuple[Plan | None, str]]) -> None:
        self.script = script

    async def plan(self, case: Case) -> Outcome:
        plan, path = self.script[case.id]
        return Outcome(plan, path, 0.5, completion_tokens=10)


def test_fallback_plans_never_count_as_model_accuracy(tmp_path: Path) -> None:
    cases = travel("tm-001", "tm-002", "tm-006", "tm-007")
    data = Dataset("toy", cases, executable=True)
    script = {
        "tm-001": (cases[0].gold, "model"),
        "tm-002": (cases[1].gold, "fallback"),  # perfect, but from the rule-based planner
        "tm-006": (None, "failed"),
        "tm-007": (cases[3].gold, "model_retry"),
    }
    rows = asyncio.run(run_dataset(data, {"planner": Scripted(script)}, executor=PlanExecutor(tmp_path)))
    summary = summarize_variant(rows["planner"])
    flat = summary["flat"]
    assert summary["paths"] == {"model": 1, "fallback": 1, "failed": 1, "model_retry": 1}
    assert flat["primary_share"] == 0.5 and flat["fallback_share"] == 0.25 and flat["failed_share"] == 0.25
    assert flat["node_f1"] == 0.5 and flat["full_match"] == 0.5 and flat["exec_success"] == 0.5  # 2 of 4
    assert flat["fallback_only.node_f1"] == 1.0 and flat["final.full_match"] == 0.75
    fallback = dict(summary["by_path"]["fallback"])
    assert fallback.pop("filler_rate", 0.0) == 0.0  # a gold plan writes no optional argument the gold lacks
    assert fallback == {"n": 1, **{k: 1.0 for k in summary["by_path"]["model"] if k not in ("n", "filler_rate")}}
    sizes = by_plan_size(rows["planner"])
    assert sizes["1"] == {"n": 2, **sizes["1"]} and sizes["1"]["node_f1"] == 0.5 and sizes["3"]["node_f1"] == 0.5
    assert flat["latency_p50_s"] == 0.5 and flat["completion_tokens_mean"] == 10


def test_online_mode_grows_the_index_and_nearest_copy_uses_it() -> None:
    weather = [json.loads(line) for line in TRAVEL.read_text().splitlines() if '"get_weather"' in line][:4]
    cases = [Case(r["id"], r["request"], Plan.model_validate(r["plan"])) for r in weather]
    index = ExampleIndex()
    learned: list[str] = []

    def learn(case: Case) -> None:
        index.add(case.request, case.gold.model_dump())
        learned.append(case.id)

    rows = asyncio.run(
        run_dataset(
            Dataset("w", cases),
            {"nn_copy": NearestCopy(index)},
            executor=None,
            on_scored=learn,
            index_size=index.__len__,
        )
    )["nn_copy"]
    assert [r.outcome.path for r in rows][0] == "none" and all(r.outcome.path == "copy" for r in rows[1:])
    assert [r.index_size for r in rows] == [0, 1, 2, 3] and learned == [c.id for c in cases]
    assert rows[0].primary["node_f1"] == 0.0 and rows[1].primary["node_f1"] > 0
    windows = online_windows(rows, 2)
    assert [(w["requests"], w["index_size"], w["n"]) for w in windows] == [("1-2", 0, 2), ("3-4", 2, 2)]
    assert windows[1]["node_f1"] >= windows[0]["node_f1"]

"""The planner's gold plans (benchmarks/datasets/travel_meeting.jsonl) run on the demo tools.

Each gold plan goes through `RunService` and `DagScheduler` with `default_registry()`, as a served
run would. The demo data must answer (almost) every request of the dataset: its cities and dates
are outside the shipped fixed tables, so this checks the generated timetables end to end.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from exec_helpers import FakeSleep, run

from contract.plan import Plan
from executors.config import ExecutorConfig
from executors.runs import RunService, RunView
from executors.scheduler import DagScheduler
from executors.stores import SqliteRunStore
from executors.tools import default_registry

DATASET = Path(__file__).resolve().parents[2] / "benchmarks" / "datasets" / "travel_meeting.jsonl"
MIN_SUCCESS_SHARE = 60 / 64


def gold_rows() -> list[dict[str, Any]]:
    if not DATASET.exists():
        pytest.skip(f"{DATASET} is not there")
    return [json.loads(line) for line in DATASET.read_text(encoding="utf-8").splitlines() if line.strip()]


def failure_reason(view: RunView) -> str:
    failed = [n for n in view.nodes if n.status != "succeeded"]
    return "; ".join(f"{n.node_id} ({n.tool}) {n.status}: {n.error}" for n in failed) or str(view.error)


def test_gold_plans_succeed_on_the_demo_tools(tmp_path: Path) -> None:
    rows = gold_rows()
    scheduler = DagScheduler(default_registry(), ExecutorConfig(), sleep=FakeSleep(), rng=random.Random(7))
    store = SqliteRunStore(tmp_path / "runs.sqlite3")
    service = RunService(store, scheduler)

    async def run_all() -> list[tuple[str, RunView]]:
        views = [
            (row["id"], await service.run("gold", row["request"], Plan.model_validate(row["plan"]))) for row in rows
        ]
        await service.aclose()
        await store.aclose()
        return views

    views = run(run_all())
    failures = {row_id: failure_reason(view) for row_id, view in views if view.status != "succeeded"}
    succeeded = len(rows) - len(failures)
    print(f"gold plans: {succeeded}/{len(rows)} succeeded; failures: {json.dumps(failures, indent=1)}")
    assert succeeded >= MIN_SUCCESS_SHARE * len(rows), failures

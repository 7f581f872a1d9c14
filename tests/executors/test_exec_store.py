"""SqliteRunStore: tenant isolation, idempotent node results, ordered events, plan history."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from exec_helpers import plan_of

from executors.errors import RunNotFound
from executors.observation import NodeResult
from executors.store import EventType, RunRecord, SqliteRunStore

PLAN = plan_of({"id": "n1", "tool": "echo", "args": {"label": "a"}})


def result(node_id: str = "n1", status: str = "succeeded", round_: int = 0, output: object = 1) -> NodeResult:
    return NodeResult(node_id=node_id, tool="echo", status=status, round=round_, attempts=1, output=output)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteRunStore]:
    with SqliteRunStore(tmp_path / "runs.sqlite3") as opened:
        opened.create_run(RunRecord(run_id="r1", tenant="alice", request="trip", plan=PLAN))
        yield opened


def test_wal_mode(store: SqliteRunStore) -> None:
    connection = sqlite3.connect(store.path)
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()


def test_runs_of_one_tenant_are_invisible_to_another(store: SqliteRunStore) -> None:
    assert store.get_run("alice", "r1") is not None
    assert store.get_run("bob", "r1") is None
    assert store.list_runs("bob") == [] and [r.run_id for r in store.list_runs("alice")] == ["r1"]
    for attempt in (
        lambda: store.update_run("bob", "r1", status="failed"),
        lambda: store.save_result("bob", "r1", result()),
        lambda: store.append_event("bob", "r1", "run_started"),
        lambda: store.events("bob", "r1"),
        lambda: store.results("bob", "r1"),
        lambda: store.plans("bob", "r1"),
    ):
        with pytest.raises(RunNotFound):
            attempt()
    record = store.get_run("alice", "r1")
    assert record is not None and record.status == "running"  # bob's writes changed nothing


def test_node_results_are_idempotent_per_run_round_node(store: SqliteRunStore) -> None:
    first = store.save_result("alice", "r1", result(output="first"))
    second = store.save_result("alice", "r1", result(output="second"))
    assert first.output == "first" and second.output == "first"  # the first committed result wins
    store.save_result("alice", "r1", result(round_=1, output="round 1"))
    assert [r.output for r in store.results("alice", "r1")] == ["first", "round 1"]
    assert [r.output for r in store.results("alice", "r1", round_=1)] == ["round 1"]


def test_events_are_ordered_per_run(store: SqliteRunStore) -> None:
    store.create_run(RunRecord(run_id="r2", tenant="alice", request="other", plan=PLAN))
    kinds: list[EventType] = ["run_started", "node_started", "node_finished"]
    for kind in kinds:
        store.append_event("alice", "r1", kind, node_id="n1")
    store.append_event("alice", "r2", "run_started")
    assert [(e.seq, e.type) for e in store.events("alice", "r1")] == [
        (1, "run_started"),
        (2, "node_started"),
        (3, "node_finished"),
    ]
    assert [e.seq for e in store.events("alice", "r1", after=2)] == [3]
    assert [e.seq for e in store.events("alice", "r2")] == [1]


def test_update_run_keeps_plan_history_and_survives_reopen(store: SqliteRunStore, tmp_path: Path) -> None:
    new_plan = plan_of({"id": "n1", "tool": "echo", "args": {"label": "b"}})
    store.update_run("alice", "r1", plan=new_plan, round_=1, replans=1)
    store.update_run("alice", "r1", status="failed", error={"error": "x", "type": "t", "retryable": False})
    store.close()
    with SqliteRunStore(tmp_path / "runs.sqlite3") as reopened:
        record = reopened.get_run("alice", "r1")
        assert record is not None
        assert (record.status, record.round, record.replans, record.plan) == ("failed", 1, 1, new_plan)
        assert record.error == {"error": "x", "type": "t", "retryable": False}
        assert [round_ for round_, _ in reopened.plans("alice", "r1")] == [0, 1]

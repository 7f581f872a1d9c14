"""RunService: background runs, events (replay + live), re-planning with reuse, run-level stops."""

from __future__ import annotations

from pathlib import Path

import pytest
from exec_helpers import FakeReplanner, FlakyState, make_registry, make_scheduler, plan_of, run

from executors.errors import RunNotFound
from executors.runs import Replanner, RunService, RunView
from executors.store import RunEvent, SqliteRunStore
from planner.plan import Plan

GOOD = plan_of(
    {"id": "n1", "tool": "echo", "args": {"label": "flight", "value": 900}},
    {"id": "n2", "tool": "echo", "args": {"label": "hotel", "value": 700}},
    {"id": "n3", "tool": "echo", "args": {"label": "total", "items": ["$n1.value", "$n2.value"]}},
)
FAILING = plan_of(
    {"id": "n1", "tool": "echo", "args": {"label": "flight", "value": 900}},
    {"id": "n2", "tool": "broken", "args": {"label": "hotel"}},
    {"id": "n3", "tool": "echo", "args": {"label": "total", "items": ["$n1.value", "$n2.value"]}},
    {"id": "n4", "tool": "echo", "args": {"label": "weather"}},
)


def service(tmp_path: Path, state: FlakyState, replanner: Replanner | None = None, **config: object) -> RunService:
    store = SqliteRunStore(tmp_path / "runs.sqlite3")
    return RunService(store, make_scheduler(make_registry(state), **config), replanner=replanner)


def finish(svc: RunService, plan: Plan, tenant: str = "alice") -> tuple[RunView, list[RunEvent]]:
    async def go() -> tuple[RunView, list[RunEvent]]:
        run_id = await svc.start(tenant, "a trip", plan)
        events = [event async for event in svc.events(tenant, run_id)]  # follows the live run to its end
        return await svc.wait(tenant, run_id), events

    return run(go())


def test_run_succeeds_with_trace_and_events(tmp_path: Path) -> None:
    svc = service(tmp_path, FlakyState())
    view, events = finish(svc, GOOD)
    assert view.status == "succeeded" and view.error is None and len(view.nodes) == 3
    assert view.nodes[-1].output == {"label": "total", "value": 1, "items": [900, 700]}
    kinds = [e.type for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("node_started") == 3 and kinds.count("node_finished") == 3
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    finished = {e.node_id: e for e in events if e.type == "node_finished"}
    assert finished["n3"].data["output_sha256"] == view.nodes[-1].output_sha256
    # replay after the end gives the same events
    replayed = run(_collect(svc, "alice", view.run_id))
    assert [e.seq for e in replayed] == [e.seq for e in events]


async def _collect(svc: RunService, tenant: str, run_id: str) -> list[RunEvent]:
    return [event async for event in svc.events(tenant, run_id)]


def test_other_tenants_cannot_see_a_run(tmp_path: Path) -> None:
    svc = service(tmp_path, FlakyState())
    view, _ = finish(svc, GOOD)
    assert svc.get("bob", view.run_id) is None
    with pytest.raises(RunNotFound):
        run(_collect(svc, "bob", view.run_id))
    with pytest.raises(RunNotFound):
        run(svc.resume("bob", view.run_id))
    assert svc.list_runs("bob") == [] and len(svc.list_runs("alice")) == 1


def test_without_replanner_a_failed_node_fails_the_run_but_other_branches_finish(tmp_path: Path) -> None:
    svc = service(tmp_path, FlakyState())
    view, events = finish(svc, FAILING)
    status = {n.node_id: n.status for n in view.nodes}
    assert status == {"n1": "succeeded", "n2": "failed", "n3": "skipped", "n4": "succeeded"}
    assert view.status == "failed" and view.error is not None
    assert view.error["type"] == "node_failed" and "n2 (broken)" in view.error["error"]
    assert [f["node_id"] for f in view.error["failures"]] == ["n2", "n3"]
    assert {"node_failed", "node_skipped"} <= {e.type for e in events}


def test_replan_after_failure_reuses_finished_results(tmp_path: Path) -> None:
    state = FlakyState()
    fixed = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "flight", "value": 900}},  # same call: reused
        {"id": "n2", "tool": "echo", "args": {"label": "hotel", "value": 650}},  # replaces the broken one
        {"id": "n3", "tool": "echo", "args": {"label": "total", "items": ["$n1.value", "$n2.value"]}},
    )
    replanner = FakeReplanner(fixed)
    svc = service(tmp_path, state, replanner)
    view, events = finish(svc, FAILING)
    assert view.status == "succeeded" and view.round == 1 and view.replans == 1
    request, summary, completed = replanner.calls[0]
    assert request == "a trip"
    # typed summaries only (executors/observation.py): the error type, never the tool's message
    assert "n2 broken: failed (tool_exception, not retryable); args: label=string" in summary
    assert "bad input" not in summary and "n3 echo: skipped (upstream_failed" in summary
    assert set(completed) == {"n1", "n4"} and "value: integer" in completed["n1"] and "900" not in completed["n1"]
    assert state.calls.count("flight") == 1  # n1 was not run again in round 1
    round1 = {n.node_id: n for n in view.current_nodes()}
    assert round1["n1"].reused_from == "r0/n1" and round1["n1"].attempts == 0
    assert round1["n3"].output == {"label": "total", "value": 1, "items": [900, 650]}
    assert [e.type for e in events].count("replan") == 1


def test_replans_are_bounded(tmp_path: Path) -> None:
    still_failing = [plan_of({"id": "n1", "tool": "broken", "args": {"label": f"try {i}"}}) for i in range(5)]
    replanner = FakeReplanner(*still_failing)
    svc = service(tmp_path, FlakyState(), replanner, max_replans=2)
    view, _ = finish(svc, FAILING)
    assert view.status == "failed" and view.replans == 2 and len(replanner.calls) == 2
    assert view.error is not None and view.error["type"] == "replans_exhausted"


def test_repeated_identical_failure_ends_the_run(tmp_path: Path) -> None:
    replanner = FakeReplanner(FAILING, FAILING)
    svc = service(tmp_path, FlakyState(), replanner, max_replans=5)
    view, _ = finish(svc, FAILING)
    assert view.status == "failed" and view.replans == 1
    assert view.error is not None and view.error["type"] == "repeated_failure"


def test_open_circuit_breaker_ends_the_run_with_an_explanation(tmp_path: Path) -> None:
    state = FlakyState(failures=100)
    replanner = FakeReplanner(GOOD)
    plan = plan_of({"id": "n1", "tool": "flaky", "args": {"label": "x"}})
    svc = service(tmp_path, state, replanner, breaker_threshold=2)
    view, _ = finish(svc, plan)
    assert view.status == "failed" and replanner.calls == []
    assert view.error is not None and view.error["type"] == "circuit_open"
    assert "circuit breaker open for flaky" in view.error["error"]
    assert view.error["failures"][0]["error"]["type"] == "circuit_open"


def test_step_cap_spans_the_run(tmp_path: Path) -> None:
    svc = service(tmp_path, FlakyState(), max_steps=2)
    view, _ = finish(svc, GOOD)
    assert view.status == "failed" and view.error is not None and view.error["type"] == "step_cap"


def test_events_follow_a_live_run(tmp_path: Path) -> None:
    svc = service(tmp_path, FlakyState())
    slow = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "a", "sleep_s": 0.05}},
        {"id": "n2", "tool": "echo", "args": {"label": "b", "sleep_s": 0.05}, "depends_on": ["n1"]},
    )

    async def go() -> tuple[list[str], str]:
        run_id = await svc.start("alice", "x", slow)
        seen: list[str] = []
        async for event in svc.events("alice", run_id):
            seen.append(event.type)
            if event.type == "node_started" and event.node_id == "n1":
                view = svc.get("alice", run_id)
                assert view is not None and view.status == "running"
        final = svc.get("alice", run_id)
        assert final is not None
        return seen, final.status

    seen, status = run(go())
    assert status == "succeeded" and seen[-1] == "run_finished" and seen.count("node_finished") == 2


def test_cancelled_run_is_reported_interrupted_and_resumes(tmp_path: Path) -> None:
    state = FlakyState()
    plan = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "quick"}},
        {"id": "n2", "tool": "echo", "args": {"label": "long", "sleep_s": 30}, "depends_on": ["n1"]},
    )
    svc = service(tmp_path, state)

    async def go() -> str:
        run_id = await svc.start("alice", "x", plan)
        async for event in svc.events("alice", run_id):
            if event.type == "node_started" and event.node_id == "n2":
                break
        await svc.aclose()  # e.g. the gateway stops
        return run_id

    run_id = run(go())
    view = svc.get("alice", run_id)
    assert view is not None and view.status == "interrupted"
    assert [n.node_id for n in view.nodes] == ["n1"]  # nothing committed for the cancelled node

    state.calls.clear()

    # resuming redoes only the unfinished n2 (it sleeps 30 s, so stop once it has started again)
    async def resume_and_stop() -> list[str]:
        await svc.resume("alice", run_id)
        seen: list[str] = []
        async for event in svc.events("alice", run_id):
            seen.append(f"{event.type}:{event.node_id}")
            if event.type == "node_started" and seen.count("run_started:None") == 2:
                break
        await svc.aclose()
        return seen

    seen = run(resume_and_stop())
    assert seen.count("node_started:n1") == 1  # from the first attempt only
    assert seen[-1] == "node_started:n2" and state.calls == ["long"]

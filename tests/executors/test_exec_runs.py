"""RunService: background runs, events (replay + live), re-planning with reuse, run-level stops.

Every test runs on both store backends (`make_store`: SQLite and a real PostgreSQL), in one event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from exec_helpers import FakeReplanner, FlakyState, make_registry, make_scheduler, plan_of, run

from contract.plan import Plan
from executors.errors import RunNotFound
from executors.quotas import PlanTooLarge
from executors.runs import Replanner, RunService, RunView
from executors.stores import RunBusy, RunEvent, RunStore, TooManyActiveRuns

T = TypeVar("T")
StoreFactory = Callable[..., RunStore]

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


def with_service(
    make_store: StoreFactory,
    state: FlakyState,
    body: Callable[[RunService], Awaitable[T]],
    replanner: Replanner | None = None,
    **config: object,
) -> T:
    """`body(service)` in one event loop; the service and its store are closed afterwards."""

    async def go() -> T:
        store = make_store()
        svc = RunService(store, make_scheduler(make_registry(state), **config), replanner=replanner)
        try:
            return await body(svc)
        finally:
            await svc.aclose()
            await store.aclose()

    return run(go())


async def finish(svc: RunService, plan: Plan, tenant: str = "alice") -> tuple[RunView, list[RunEvent]]:
    run_id = await svc.start(tenant, "a trip", plan)
    events = [event async for event in svc.events(tenant, run_id)]  # follows the live run to its end
    return await svc.wait(tenant, run_id), events


def finished(
    make_store: StoreFactory, state: FlakyState, plan: Plan, replanner: Replanner | None = None, **config: object
) -> tuple[RunView, list[RunEvent]]:
    return with_service(make_store, state, lambda svc: finish(svc, plan), replanner, **config)


def test_run_succeeds_with_trace_and_events(make_store: StoreFactory) -> None:
    async def body(svc: RunService) -> None:
        view, events = await finish(svc, GOOD)
        assert view.status == "succeeded" and view.error is None and len(view.nodes) == 3
        assert view.nodes[-1].output == {"label": "total", "value": 1, "items": [900, 700]}
        kinds = [e.type for e in events]
        assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
        assert kinds.count("node_started") == 3 and kinds.count("node_finished") == 3
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        by_node = {e.node_id: e for e in events if e.type == "node_finished"}
        assert by_node["n3"].data["output_sha256"] == view.nodes[-1].output_sha256
        replayed = await _collect(svc, "alice", view.run_id)  # replay after the end gives the same events
        assert [e.seq for e in replayed] == [e.seq for e in events]
        assert [e.seq for e in await _collect(svc, "alice", view.run_id, after=3)] == [e.seq for e in events[3:]]

    with_service(make_store, FlakyState(), body)


async def _collect(svc: RunService, tenant: str, run_id: str, after: int = 0) -> list[RunEvent]:
    return [event async for event in svc.events(tenant, run_id, after=after)]


def test_other_tenants_cannot_see_a_run(make_store: StoreFactory) -> None:
    async def body(svc: RunService) -> None:
        view, _ = await finish(svc, GOOD)
        assert await svc.get("bob", view.run_id) is None
        with pytest.raises(RunNotFound):
            await _collect(svc, "bob", view.run_id)
        with pytest.raises(RunNotFound):
            await svc.resume("bob", view.run_id)
        assert await svc.list_runs("bob") == [] and len(await svc.list_runs("alice")) == 1

    with_service(make_store, FlakyState(), body)


def test_without_replanner_a_failed_node_fails_the_run_but_other_branches_finish(make_store: StoreFactory) -> None:
    view, events = finished(make_store, FlakyState(), FAILING)
    status = {n.node_id: n.status for n in view.nodes}
    assert status == {"n1": "succeeded", "n2": "failed", "n3": "skipped", "n4": "succeeded"}
    assert view.status == "failed" and view.error is not None
    assert view.error["type"] == "node_failed" and "n2 (broken)" in view.error["error"]
    assert [f["node_id"] for f in view.error["failures"]] == ["n2", "n3"]
    assert {"node_failed", "node_skipped"} <= {e.type for e in events}


def test_replan_after_failure_reuses_finished_results(make_store: StoreFactory) -> None:
    state = FlakyState()
    fixed = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "flight", "value": 900}},  # same call: reused
        {"id": "n2", "tool": "echo", "args": {"label": "hotel", "value": 650}},  # replaces the broken one
        {"id": "n3", "tool": "echo", "args": {"label": "total", "items": ["$n1.value", "$n2.value"]}},
    )
    replanner = FakeReplanner(fixed)
    view, events = finished(make_store, state, FAILING, replanner)
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


def test_replans_are_bounded(make_store: StoreFactory) -> None:
    still_failing = [plan_of({"id": "n1", "tool": "broken", "args": {"label": f"try {i}"}}) for i in range(5)]
    replanner = FakeReplanner(*still_failing)
    view, _ = finished(make_store, FlakyState(), FAILING, replanner, max_replans=2)
    assert view.status == "failed" and view.replans == 2 and len(replanner.calls) == 2
    assert view.error is not None and view.error["type"] == "replans_exhausted"


def test_repeated_identical_failure_ends_the_run(make_store: StoreFactory) -> None:
    replanner = FakeReplanner(FAILING, FAILING)
    view, _ = finished(make_store, FlakyState(), FAILING, replanner, max_replans=5)
    assert view.status == "failed" and view.replans == 1
    assert view.error is not None and view.error["type"] == "repeated_failure"


def test_open_circuit_breaker_ends_the_run_with_an_explanation(make_store: StoreFactory) -> None:
    state = FlakyState(failures=100)
    replanner = FakeReplanner(GOOD)
    plan = plan_of({"id": "n1", "tool": "flaky", "args": {"label": "x"}})
    view, _ = finished(make_store, state, plan, replanner, breaker_threshold=2)
    assert view.status == "failed" and replanner.calls == []
    assert view.error is not None and view.error["type"] == "circuit_open"
    assert "circuit breaker open for flaky" in view.error["error"]
    assert view.error["failures"][0]["error"]["type"] == "circuit_open"


def test_step_cap_spans_the_run(make_store: StoreFactory) -> None:
    view, _ = finished(make_store, FlakyState(), GOOD, max_steps=2)
    assert view.status == "failed" and view.error is not None and view.error["type"] == "step_cap"


def test_events_follow_a_live_run(make_store: StoreFactory) -> None:
    slow = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "a", "sleep_s": 0.05}},
        {"id": "n2", "tool": "echo", "args": {"label": "b", "sleep_s": 0.05}, "depends_on": ["n1"]},
    )

    async def body(svc: RunService) -> tuple[list[str], str]:
        run_id = await svc.start("alice", "x", slow)
        seen: list[str] = []
        async for event in svc.events("alice", run_id):
            seen.append(event.type)
            if event.type == "node_started" and event.node_id == "n1":
                view = await svc.get("alice", run_id)
                assert view is not None and view.status == "running"
        final = await svc.get("alice", run_id)
        assert final is not None
        return seen, final.status

    seen, status = with_service(make_store, FlakyState(), body)
    assert status == "succeeded" and seen[-1] == "run_finished" and seen.count("node_finished") == 2


def test_cancelled_run_is_reported_interrupted_and_resumes(make_store: StoreFactory) -> None:
    state = FlakyState()
    plan = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "quick"}},
        {"id": "n2", "tool": "echo", "args": {"label": "long", "sleep_s": 30}, "depends_on": ["n1"]},
    )

    async def body(svc: RunService) -> list[str]:
        run_id = await svc.start("alice", "x", plan)
        async for event in svc.events("alice", run_id):
            if event.type == "node_started" and event.node_id == "n2":
                break
        await svc.aclose()  # e.g. the gateway stops: the lease is released
        view = await svc.get("alice", run_id)
        assert view is not None and view.status == "interrupted"
        assert [n.node_id for n in view.nodes] == ["n1"]  # nothing committed for the cancelled node
        state.calls.clear()
        # resuming redoes only the unfinished n2 (it sleeps 30 s, so stop once it has started again)
        await svc.resume("alice", run_id)
        seen: list[str] = []
        async for event in svc.events("alice", run_id):
            seen.append(f"{event.type}:{event.node_id}")
            if event.type == "node_started" and seen.count("run_started:None") == 2:
                break
        return seen

    seen = with_service(make_store, state, body)
    assert seen.count("node_started:n1") == 1  # from the first attempt only
    assert seen[-1] == "node_started:n2" and state.calls == ["long"]


def test_resume_of_a_live_run_is_refused_and_changes_nothing(make_store: StoreFactory) -> None:
    state = FlakyState()
    plan = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "quick"}},
        {"id": "n2", "tool": "echo", "args": {"label": "long", "sleep_s": 0.3}, "depends_on": ["n1"]},
    )

    async def body(svc: RunService) -> list[RunEvent]:
        run_id = await svc.start("alice", "x", plan)
        with pytest.raises(RunBusy):
            await svc.resume("alice", run_id)  # this process drives it
        await svc.wait("alice", run_id)
        assert await svc.resume("alice", run_id) == run_id  # finished: left as it is, no new driver
        return await _collect(svc, "alice", run_id)

    events = with_service(make_store, state, body)
    kinds = [e.type for e in events]
    assert kinds.count("run_started") == 1 and kinds.count("run_finished") == 1
    assert state.calls == ["quick", "long"]


def test_node_output_over_the_cap_fails_the_node_and_its_fallback_runs(make_store: StoreFactory) -> None:
    plan = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "x" * 3000}, "fallback": "n2"},
        {"id": "n2", "tool": "echo", "args": {"label": "small"}},
        {"id": "n3", "tool": "echo", "args": {"label": "$n1.label"}},
    )

    async def body(svc: RunService) -> RunView:
        svc.runs_config = svc.runs_config.model_copy(update={"max_node_output_bytes": 1024})
        view, _ = await finish(svc, plan)
        return view

    view = with_service(make_store, FlakyState(), body)
    nodes = {n.node_id: n for n in view.nodes}
    assert nodes["n1"].status == "failed" and nodes["n1"].output is None
    assert nodes["n1"].error is not None and nodes["n1"].error["type"] == "output_too_large"
    assert nodes["n1"].error["retryable"] is False and nodes["n1"].attempts == 1  # not retried
    assert nodes["n2"].status == "succeeded" and nodes["n3"].output["label"] == "small"  # type: ignore[index]
    assert view.status == "succeeded"


def test_plan_and_tenant_caps_refuse_a_new_run(make_store: StoreFactory) -> None:
    big = plan_of(*({"id": f"n{i}", "tool": "echo", "args": {"label": str(i)}} for i in range(1, 6)))
    wide = plan_of({"id": "n1", "tool": "echo", "args": {"label": "y" * 5000}})
    slow = plan_of({"id": "n1", "tool": "echo", "args": {"label": "z", "sleep_s": 30}})

    async def body(svc: RunService) -> None:
        svc.runs_config = svc.runs_config.model_copy(
            update={"max_plan_nodes": 4, "max_plan_bytes": 4096, "max_active_runs_per_tenant": 1}
        )
        with pytest.raises(PlanTooLarge, match="5 nodes"):
            await svc.start("alice", "x", big)
        with pytest.raises(PlanTooLarge, match="bytes"):
            await svc.start("alice", "x", wide)
        await svc.start("alice", "x", slow)
        with pytest.raises(TooManyActiveRuns):
            await svc.start("alice", "x", slow)
        await svc.start("bob", "x", slow)  # another tenant's cap is its own
        assert len(await svc.list_runs("alice")) == 1

    with_service(make_store, FlakyState(), body)

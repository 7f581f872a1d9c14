"""People in the loop, on both store backends (SQLite and a real PostgreSQL): a call of an
approval-required tool holds the run in `awaiting_approval` (durably: a new service on the same
store, with its takeover sweep, leaves it paused) until approved (the tool runs once) or rejected
(it never runs); requests expire; a tenant's plans can need approval as a whole; a rejection may
feed a re-plan; runs that end for good open an escalation that can be resumed, re-planned or closed;
the run list filters and pages."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from exec_helpers import Echo, FakeReplanner, FlakyState, make_registry, make_scheduler, plan_of, run

from executors.approvals import ApprovalsConfig, Decider, NotAwaitingApproval
from executors.errors import RunNotFound
from executors.escalations import NotEscalated
from executors.registry import ToolRegistry
from executors.runs import Replanner, RunService, RunView
from executors.steering import Steering
from executors.stores import RunStore, TooManyActiveRuns
from executors.upkeep import take_over_orphans

T = TypeVar("T")
StoreFactory = Callable[..., RunStore]
ALICE = Decider(tenant="alice", name="Alice Ops", key_id="key_0123456789abcdef01234567")

BOOKING = plan_of(
    {"id": "n1", "tool": "echo", "args": {"label": "hotel", "value": 700}},
    {"id": "n2", "tool": "book", "args": {"label": "book", "value": "$n1.value"}},
    {"id": "n3", "tool": "echo", "args": {"label": "weather"}},
    {"id": "n4", "tool": "echo", "args": {"label": "confirm", "items": ["$n2.value"]}},
)


def registry_with_booking(state: FlakyState) -> ToolRegistry:
    registry = make_registry(state)

    @registry.tool(approval="required")
    async def book(label: str, value: int) -> Echo:
        """Book (and pay): needs a person's approval."""
        state.calls.append(label)
        return Echo(label=label, value=value, items=[value])

    return registry


def service(
    store: RunStore,
    state: FlakyState,
    steering: Steering | None = None,
    replanner: Replanner | None = None,
    **config: object,
) -> RunService:
    return RunService(
        store, make_scheduler(registry_with_booking(state), **config), steering=steering, replanner=replanner
    )


def on_service(
    make_store: StoreFactory,
    body: Callable[[RunService, FlakyState], Awaitable[T]],
    steering: Steering | None = None,
    replanner: Replanner | None = None,
    **config: object,
) -> T:
    async def go() -> T:
        state = FlakyState()
        store = make_store()
        svc = service(store, state, steering, replanner, **config)
        try:
            return await body(svc, state)
        finally:
            await svc.aclose()
            await store.aclose()

    return run(go())


async def until_paused(svc: RunService, tenant: str, run_id: str) -> RunView:
    async for event in svc.events(tenant, run_id):
        if event.type == "awaiting_approval":
            break
    view = await svc.get(tenant, run_id)
    assert view is not None
    return view


async def until_finished(svc: RunService, tenant: str, run_id: str) -> tuple[RunView, list[str]]:
    kinds = [event.type async for event in svc.events(tenant, run_id)]
    for _ in range(200):  # the event stream ends with run_finished; the record is written just before
        view = await svc.get(tenant, run_id)
        assert view is not None
        if view.status in ("succeeded", "failed"):
            return view, kinds
        await asyncio.sleep(0.01)
    raise AssertionError("the run did not finish")


def test_a_held_call_pauses_the_run_and_runs_once_after_approval(make_store: StoreFactory) -> None:
    async def body(svc: RunService, state: FlakyState) -> None:
        run_id = await svc.start("alice", "book a hotel", BOOKING)
        paused = await until_paused(svc, "alice", run_id)
        assert paused.status == "awaiting_approval"
        assert {n.node_id: n.status for n in paused.nodes} == {"n1": "succeeded", "n3": "succeeded"}
        pending = (paused.approval or {})["pending"]
        assert pending["kind"] == "tool" and pending["expires_at"] > pending["requested_at"]
        assert [(c["node_id"], c["tool"], c["args"]) for c in pending["calls"]] == [
            ("n2", "book", {"label": "book", "value": 700})  # the resolved arguments, not "$n1.value"
        ]
        assert "book" not in state.calls
        with pytest.raises(RunNotFound):  # another tenant cannot decide (nor see)
            await svc.decide("bob", run_id, "approved", by=Decider(tenant="bob", name="Bob"))
        decision = await svc.decide("alice", run_id, "approved", by=ALICE)
        assert decision.by == ALICE and decision.calls == {"n2": pending["calls"][0]["input_hash"]}
        with pytest.raises(NotAwaitingApproval):
            await svc.decide("alice", run_id, "approved", by=ALICE)
        view, kinds = await until_finished(svc, "alice", run_id)
        assert view.status == "succeeded", view.error
        assert state.calls.count("book") == 1 and state.calls.count("hotel") == 1
        assert {n.node_id for n in view.nodes} == {"n1", "n2", "n3", "n4"}
        assert kinds.count("approval_decided") == 1 and view.escalation is None
        decided = view.approval or {}
        assert decided["pending"] is None and decided["decisions"][0]["by"] == ALICE.model_dump()

    on_service(make_store, body)


def test_a_rejected_call_never_runs(make_store: StoreFactory) -> None:
    async def body(svc: RunService, state: FlakyState) -> None:
        run_id = await svc.start("alice", "book a hotel", BOOKING)
        await until_paused(svc, "alice", run_id)
        await svc.decide("alice", run_id, "rejected", by=ALICE, reason="too expensive")
        view, _ = await until_finished(svc, "alice", run_id)
        assert view.status == "failed" and (view.error or {})["type"] == "approval_rejected"
        assert "too expensive" in (view.error or {})["error"] and "Alice Ops" in (view.error or {})["error"]
        assert "book" not in state.calls and "confirm" not in state.calls
        assert view.escalation is None  # a person decided: nothing to escalate

    on_service(make_store, body)


def test_a_paused_run_survives_a_restart_and_is_not_taken_over(make_store: StoreFactory) -> None:
    async def go() -> None:
        state = FlakyState()
        first_store = make_store(lease_ttl_s=0.5, heartbeat_s=0.1)
        first = service(first_store, state)
        run_id = await first.start("alice", "book a hotel", BOOKING)
        await until_paused(first, "alice", run_id)
        await first.aclose()
        await first_store.aclose()
        await asyncio.sleep(0.7)  # longer than the lease: a running run would now be an orphan
        store = make_store(lease_ttl_s=0.5, heartbeat_s=0.1)
        second = service(store, state)
        try:
            assert await take_over_orphans(second) == []
            view = await second.get("alice", run_id)
            assert view is not None and view.status == "awaiting_approval"
            await second.resume("alice", run_id)  # a resume does not bypass the approval either
            assert (await second.get("alice", run_id)).status == "awaiting_approval"  # type: ignore[union-attr]
            assert "book" not in state.calls
            await second.decide("alice", run_id, "approved", by=ALICE)
            view, _ = await until_finished(second, "alice", run_id)
            assert view.status == "succeeded" and state.calls.count("book") == 1
            assert state.calls.count("hotel") == 1  # committed before the restart: not redone
        finally:
            await second.aclose()
            await store.aclose()

    run(go())


def test_an_undecided_request_expires_and_escalates(make_store: StoreFactory) -> None:
    async def body(svc: RunService, state: FlakyState) -> None:
        run_id = await svc.start("alice", "book a hotel", BOOKING)
        await until_paused(svc, "alice", run_id)
        await asyncio.sleep(0.1)
        assert await svc.expire_overdue() == [run_id]
        view, kinds = await until_finished(svc, "alice", run_id)
        assert view.status == "failed" and (view.error or {})["type"] == "approval_expired"
        assert (view.escalation or {})["state"] == "open" and "escalated" in kinds
        assert "book" not in state.calls

    on_service(make_store, body, Steering(approvals=ApprovalsConfig(timeout_s=0.05)))


def test_a_tenant_can_require_approval_of_every_plan(make_store: StoreFactory) -> None:
    plan = plan_of({"id": "n1", "tool": "echo", "args": {"label": "a"}})

    async def body(svc: RunService, state: FlakyState) -> None:
        run_id = await svc.start("alice", "anything", plan)
        paused = await until_paused(svc, "alice", run_id)
        assert (paused.approval or {})["pending"]["kind"] == "plan" and paused.nodes == [] and state.calls == []
        other = await svc.start("bob", "anything", plan)  # bob's plans need no approval
        assert (await until_finished(svc, "bob", other))[0].status == "succeeded"
        await svc.decide("alice", run_id, "approved", by=ALICE)
        view, _ = await until_finished(svc, "alice", run_id)
        assert view.status == "succeeded" and state.calls == ["a", "a"]

    on_service(make_store, body, Steering(approvals=ApprovalsConfig(plan_tenants=["alice"])))


def test_a_rejection_can_feed_a_replan(make_store: StoreFactory) -> None:
    cheaper = plan_of({"id": "n1", "tool": "echo", "args": {"label": "hostel", "value": 90}})
    replanner = FakeReplanner(cheaper)

    async def body(svc: RunService, state: FlakyState) -> None:
        run_id = await svc.start("alice", "book a hotel", BOOKING)
        await until_paused(svc, "alice", run_id)
        await svc.decide("alice", run_id, "rejected", by=ALICE, reason="find something under 100", replan=True)
        view, kinds = await until_finished(svc, "alice", run_id)
        assert view.status == "succeeded" and view.round == 1 and "book" not in state.calls
        assert "find something under 100" in replanner.calls[0][1] and "replan" in kinds

    on_service(make_store, body, replanner=replanner)


def test_an_escalated_run_is_queued_and_resumes_with_a_fresh_budget(make_store: StoreFactory) -> None:
    plan = plan_of(*({"id": f"n{i}", "tool": "echo", "args": {"label": f"s{i}"}} for i in range(1, 4)))

    async def body(svc: RunService, state: FlakyState) -> None:
        run_id = await svc.start("alice", "three steps", plan)
        view, kinds = await until_finished(svc, "alice", run_id)
        assert (view.error or {})["type"] == "step_cap" and (view.escalation or {})["state"] == "open"
        assert kinds[-2:] == ["escalated", "run_finished"]
        queued = await svc.store.list_runs("alice", escalation="open")
        assert [r.run_id for r in queued] == [run_id] and await svc.store.list_runs("bob", escalation="open") == []
        with pytest.raises(RunNotFound):
            await svc.reopen_escalation("bob", run_id, "resume", Decider(tenant="bob", name="B"), None)
        assert await svc.reopen_escalation("alice", run_id, "resume", ALICE, None) == 1
        with pytest.raises(NotEscalated):
            await svc.reopen_escalation("alice", run_id, "resume", ALICE, None)
        view, _ = await until_finished(svc, "alice", run_id)
        assert view.status == "succeeded" and view.round == 1, view.error
        assert sorted(state.calls) == ["s1", "s2", "s3"]  # s1 and s2 were reused, not run again
        assert (view.escalation or {})["state"] == "resumed" and (view.escalation or {})["handled_by"][
            "name"
        ] == "Alice Ops"
        assert await svc.store.list_runs("alice", escalation="open") == []

    on_service(make_store, body, max_steps=2)


def test_an_escalation_is_replanned_with_an_edited_plan_or_closed(make_store: StoreFactory) -> None:
    failing = plan_of({"id": "n1", "tool": "broken", "args": {"label": "x"}})
    edited = plan_of({"id": "n1", "tool": "echo", "args": {"label": "fixed"}})

    async def body(svc: RunService, state: FlakyState) -> None:
        first = await svc.start("alice", "fails", failing)
        view, _ = await until_finished(svc, "alice", first)
        assert (view.error or {})["type"] == "node_failed" and (view.escalation or {})["state"] == "open"
        await svc.reopen_escalation("alice", first, "replan", ALICE, edited)
        view, _ = await until_finished(svc, "alice", first)
        assert view.status == "succeeded" and [n.tool for n in view.current_nodes()] == ["echo"]
        assert [r for r, _ in await svc.store.plans("alice", first)] == [0, 1]
        second = await svc.start("alice", "fails again", failing)
        await until_finished(svc, "alice", second)
        closed = await svc.close_escalation("alice", second, ALICE, "known outage")
        assert closed["state"] == "closed" and closed["note"] == "known outage"
        with pytest.raises(NotEscalated):
            await svc.close_escalation("alice", second, ALICE, "again")
        record = await svc.store.get_run("alice", second)
        assert record is not None and record.status == "failed" and (record.escalation or {})["state"] == "closed"

    on_service(make_store, body)


def test_a_run_executes_again_only_within_the_tenant_s_active_runs_cap(make_store: StoreFactory) -> None:
    """Approvals and escalations used to move runs back to `running` past the cap checked at creation."""
    failing = plan_of({"id": "n1", "tool": "broken", "args": {"label": "x"}})
    edited = plan_of({"id": "n1", "tool": "echo", "args": {"label": "fixed"}})
    holding = plan_of({"id": "n1", "tool": "gate", "args": {"label": "held"}})

    async def go() -> None:
        state, release = FlakyState(), asyncio.Event()
        registry = registry_with_booking(state)

        @registry.tool(timeout_s=60)
        async def gate(label: str) -> Echo:
            """Executes until the test releases it."""
            state.calls.append(label)
            await release.wait()
            return Echo(label=label, value=1, items=[1])

        store = make_store(max_active_runs_per_tenant=1)
        svc = RunService(store, make_scheduler(registry))  # no re-planner: the failing run escalates
        try:
            paused = await svc.start("alice", "book a hotel", BOOKING)
            await until_paused(svc, "alice", paused)
            refused = await svc.start("alice", "book another", BOOKING)
            await until_paused(svc, "alice", refused)
            escalated = await svc.start("alice", "fails", failing)
            await until_finished(svc, "alice", escalated)
            busy = await svc.start("alice", "holds the one slot", holding)
            other = await svc.start("bob", "bob's own cap", BOOKING)
            await until_paused(svc, "bob", other)

            attempts: list[Callable[[], Awaitable[object]]] = [
                lambda: svc.decide("alice", paused, "approved", by=ALICE),
                lambda: svc.decide("alice", paused, "rejected", by=ALICE, reason="cheaper", replan=True),
                lambda: svc.reopen_escalation("alice", escalated, "resume", ALICE, None),
                lambda: svc.reopen_escalation("alice", escalated, "replan", ALICE, edited),
            ]
            for attempt in attempts:
                with pytest.raises(TooManyActiveRuns):
                    await attempt()
            view = await svc.get("alice", paused)
            assert view is not None and view.status == "awaiting_approval" and view.approval is not None
            assert view.approval["decisions"] == [] and "book" not in state.calls  # nothing recorded or run
            record = await svc.store.get_run("alice", escalated)
            assert record is not None and record.status == "failed" and (record.escalation or {})["state"] == "open"
            # a refusal only stops its run: never held back by the cap; another tenant has its own cap
            await svc.decide("alice", refused, "rejected", by=ALICE, reason="no")
            assert (await until_finished(svc, "alice", refused))[0].status == "failed"
            await svc.decide("bob", other, "approved", by=Decider(tenant="bob", name="Bob"))
            assert (await until_finished(svc, "bob", other))[0].status == "succeeded"

            release.set()  # the executing run ends: the slot is free again
            assert (await until_finished(svc, "alice", busy))[0].status == "succeeded"
            await svc.decide("alice", paused, "approved", by=ALICE)
            assert (await until_finished(svc, "alice", paused))[0].status == "succeeded"
            await svc.reopen_escalation("alice", escalated, "replan", ALICE, edited)
            assert (await until_finished(svc, "alice", escalated))[0].status == "succeeded"
        finally:
            release.set()
            await svc.aclose()
            await store.aclose()

    run(go())


def test_the_run_list_filters_by_status_and_pages_newest_first(make_store: StoreFactory) -> None:
    good = plan_of({"id": "n1", "tool": "echo", "args": {"label": "a"}})

    async def body(svc: RunService, state: FlakyState) -> None:
        ids = []
        for _ in range(5):
            run_id = await svc.start("alice", "one", good)
            await until_finished(svc, "alice", run_id)
            ids.append(run_id)
        paused = await svc.start("alice", "book", BOOKING)
        await until_paused(svc, "alice", paused)
        store = svc.store
        assert [r.run_id for r in await store.list_runs("alice", status="awaiting_approval")] == [paused]
        assert len(await store.list_runs("alice", status="succeeded")) == 5
        page1 = await store.list_runs("alice", limit=4)
        page2 = await store.list_runs("alice", limit=4, before=page1[-1].run_id)
        assert [r.run_id for r in page1 + page2] == [paused, *reversed(ids)]
        assert await store.list_runs("bob") == [] and await store.list_runs("bob", before=paused) == []

    on_service(make_store, body)

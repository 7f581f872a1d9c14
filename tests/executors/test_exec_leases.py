"""One driver per run, on both backends: a stalled driver whose lease expired is fenced out once
another replica took the run over; dependants are built from the COMMITTED output of a node."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

from exec_helpers import FlakyState, make_registry, make_scheduler, plan_of, run

from contract.plan import PlanNode
from executors.leases import LeaseKeeper
from executors.observation import NodeResult
from executors.runs import RunService
from executors.stores import RunRecord, RunStore, RunUpdate


def test_a_stalled_driver_is_fenced_out_after_a_takeover(make_store: Callable[..., RunStore]) -> None:
    state = FlakyState()
    plan = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "slow", "sleep_s": 1.0}},
        {"id": "n2", "tool": "echo", "args": {"label": "next", "items": "$n1.items"}, "depends_on": ["n1"]},
    )

    async def go() -> tuple[str, list[Any]]:
        store_a, store_b = make_store(lease_ttl_s=0.4, heartbeat_s=0.1), make_store(lease_ttl_s=5, heartbeat_s=0.5)
        a = RunService(store_a, make_scheduler(make_registry(state)), replica_id="replica-a")
        b = RunService(store_b, make_scheduler(make_registry(state)), replica_id="replica-b")
        original = LeaseKeeper._beat

        async def stalled(keeper: LeaseKeeper) -> None:  # A's process is frozen: no heartbeat
            await asyncio.Event().wait()

        LeaseKeeper._beat = stalled  # type: ignore[method-assign]
        try:
            run_id = await a.start("alice", "x", plan)
            await asyncio.sleep(0.6)  # A's lease has expired; A's tool is still sleeping
        finally:
            LeaseKeeper._beat = original  # type: ignore[method-assign]
        assert (await b.get("alice", run_id)).status == "interrupted"  # type: ignore[union-attr]  # lease expired
        assert await b.take_over("alice", run_id)
        finished = await b.wait("alice", run_id)
        await a.wait("alice", run_id)  # A's late commit of n1 was refused: A stopped, wrote nothing
        events = [e async for e in b.events("alice", run_id)]
        for service, store in ((a, store_a), (b, store_b)):
            await service.aclose()
            await store.aclose()
        return finished.status, [events, finished]

    status, (events, finished) = run(go())
    assert status == "succeeded"
    kinds = [e.type for e in events]
    assert kinds.count("run_started") == 2 and kinds.count("run_finished") == 1
    assert kinds.count("node_finished") == 2  # one commit per node: A's late n1 never landed
    assert Counter(state.calls) == Counter({"slow": 2, "next": 1})  # A's stalled call did not drive n2
    nodes = {n.node_id: n for n in finished.nodes}
    assert nodes["n2"].args is not None and nodes["n2"].args["items"] == nodes["n1"].output["items"]  # type: ignore[index]


def test_dependants_use_the_committed_output() -> None:
    """The scheduler takes what `node_settled` returns (what the store holds) for everything after it."""
    plan = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "mine", "value": 1}},
        {"id": "n2", "tool": "echo", "args": {"label": "$n1.label"}, "depends_on": ["n1"]},
    )

    class CommittedElsewhere:
        async def node_started(self, node: PlanNode, round_: int) -> None:
            return None

        async def node_retrying(self, *args: Any) -> None:
            return None

        async def node_settled(self, result: NodeResult) -> NodeResult:
            if result.node_id == "n1":  # the store already held another driver's n1
                return result.model_copy(update={"output": {"label": "committed", "value": 7, "items": [7]}})
            return result

    outcome = run(make_scheduler(make_registry()).run_plan(plan, observer=CommittedElsewhere()))
    assert outcome.ok and outcome.results["n1"].output["label"] == "committed"  # type: ignore[index]
    assert (outcome.results["n2"].args or {})["label"] == "committed"


def test_a_follower_elsewhere_waits_for_run_finished_after_the_final_status(
    make_store: Callable[..., RunStore],
) -> None:
    """A driver writes the final status, then appends `run_finished`, then releases its lease. A
    follower in another process that looks in between must not end the stream without that event."""
    plan = plan_of({"id": "n1", "tool": "echo", "args": {"label": "x"}})

    async def go() -> list[str]:
        driver, follower_store = make_store(), make_store()
        follower = RunService(follower_store, make_scheduler(make_registry()), replica_id="replica-b")
        try:
            lease = await driver.create_run(
                RunRecord(run_id="r1", tenant="alice", request="x", plan=plan), owner="replica-a", ttl_s=30
            )
            await driver.append_event(lease, "run_started")
            await driver.update_run(lease, RunUpdate(status="succeeded"))  # the verdict, before its event

            async def follow() -> list[str]:
                return [e.type async for e in follower.events("alice", "r1")]

            task = asyncio.create_task(follow())
            await asyncio.sleep(0.5)  # ten watch ticks: the follower has read run_started and looked
            assert not task.done(), "the stream ended before run_finished"
            await driver.append_event(lease, "run_finished", data={"status": "succeeded"})
            await driver.release_lease(lease)
            return await asyncio.wait_for(task, timeout=10)
        finally:
            await follower.aclose()
            await follower_store.aclose()
            await driver.aclose()

    assert run(go()) == ["run_started", "run_finished"]

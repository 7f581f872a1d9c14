"""The RunStore contract, on both backends (SQLite file, real PostgreSQL): tenant isolation,
idempotent node results, ordered events, plan history, leases with fenced writes, quotas, retention,
the tenant-scoped cache, and follower wake-ups."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from exec_helpers import plan_of, run

from executors.errors import RunNotFound
from executors.observation import NodeResult
from executors.stores import (
    EventType,
    Lease,
    LeaseLost,
    RunBusy,
    RunRecord,
    RunStore,
    RunUpdate,
    StoredBytesQuota,
    StoredRunsQuota,
    TenantQuota,
    TooManyActiveRuns,
)

PLAN = plan_of({"id": "n1", "tool": "echo", "args": {"label": "a"}})
LONG = 30.0  # a lease that cannot expire during the test
Body = Callable[[RunStore, Lease], Awaitable[None]]


def result(node_id: str = "n1", status: str = "succeeded", round_: int = 0, output: object = 1) -> NodeResult:
    return NodeResult(node_id=node_id, tool="echo", status=status, round=round_, attempts=1, output=output)  # type: ignore[arg-type]


def record(run_id: str = "r1", tenant: str = "alice") -> RunRecord:
    return RunRecord(run_id=run_id, tenant=tenant, request="trip", plan=PLAN)


def with_run(make_store: Callable[..., RunStore], body: Body, **config: Any) -> None:
    """Run `body(store, lease of run r1 of alice)` in one event loop, then close the store."""

    async def go() -> None:
        store = make_store(**config)
        try:
            lease = await store.create_run(record(), owner="replica-a", ttl_s=LONG)
            await body(store, lease)
        finally:
            await store.aclose()

    run(go())


def test_runs_of_one_tenant_are_invisible_to_another(make_store: Callable[..., RunStore]) -> None:
    async def body(store: RunStore, lease: Lease) -> None:
        assert await store.get_run("alice", "r1") is not None
        assert await store.get_run("bob", "r1") is None
        assert await store.list_runs("bob") == [] and [r.run_id for r in await store.list_runs("alice")] == ["r1"]
        forged = Lease("bob", "r1", lease.owner, lease.epoch, lease.expires_at)  # bob guessing alice's lease
        for attempt in (
            store.acquire_lease("bob", "r1", owner="x", ttl_s=LONG),
            store.update_run(forged, RunUpdate(status="failed")),
            store.save_result(forged, result()),
            store.append_event(forged, "run_started"),
            store.events("bob", "r1"),
            store.results("bob", "r1"),
            store.plans("bob", "r1"),
        ):
            with pytest.raises(RunNotFound):
                await attempt
        stored = await store.get_run("alice", "r1")
        assert stored is not None and stored.status == "running"  # bob's writes changed nothing
        assert await store.events("alice", "r1") == [] and await store.results("alice", "r1") == []

    with_run(make_store, body)


def test_node_results_are_idempotent_per_run_round_node(make_store: Callable[..., RunStore]) -> None:
    async def body(store: RunStore, lease: Lease) -> None:
        first = await store.save_result(lease, result(output="first"))
        second = await store.save_result(lease, result(output="second"))
        assert first.output == "first" and second.output == "first"  # the first committed result wins
        await store.save_result(lease, result(round_=1, output="round 1"))
        assert [r.output for r in await store.results("alice", "r1")] == ["first", "round 1"]
        assert [r.output for r in await store.results("alice", "r1", round_=1)] == ["round 1"]

    with_run(make_store, body)


def test_events_are_ordered_per_run(make_store: Callable[..., RunStore]) -> None:
    async def body(store: RunStore, lease: Lease) -> None:
        other = await store.create_run(record("r2"), owner="replica-a", ttl_s=LONG)
        kinds: list[EventType] = ["run_started", "node_started", "node_finished"]
        for kind in kinds:
            await store.append_event(lease, kind, node_id="n1")
        await store.append_event(other, "run_started")
        assert [(e.seq, e.type) for e in await store.events("alice", "r1")] == [
            (1, "run_started"),
            (2, "node_started"),
            (3, "node_finished"),
        ]
        assert [e.seq for e in await store.events("alice", "r1", after=2)] == [3]
        assert [e.seq for e in await store.events("alice", "r1", limit=2)] == [1, 2]
        assert [e.seq for e in await store.events("alice", "r2")] == [1]

    with_run(make_store, body)


def test_update_run_keeps_plan_history_and_survives_reopen(make_store: Callable[..., RunStore]) -> None:
    new_plan = plan_of({"id": "n1", "tool": "echo", "args": {"label": "b"}})

    async def body(store: RunStore, lease: Lease) -> None:
        await store.update_run(lease, RunUpdate(plan=new_plan, round=1, replans=1))
        await store.update_run(lease, RunUpdate(status="failed", error={"error": "x", "type": "t", "retryable": False}))

    with_run(make_store, body)

    async def reopen() -> None:
        reopened = make_store()
        try:
            stored = await reopened.get_run("alice", "r1")
            assert stored is not None
            assert (stored.status, stored.round, stored.replans, stored.plan) == ("failed", 1, 1, new_plan)
            assert stored.error == {"error": "x", "type": "t", "retryable": False}
            assert [round_ for round_, _ in await reopened.plans("alice", "r1")] == [0, 1]
        finally:
            await reopened.aclose()

    run(reopen())


def test_one_live_lease_per_run_and_stale_drivers_are_fenced(make_store: Callable[..., RunStore]) -> None:
    async def body(store: RunStore, lease: Lease) -> None:
        live = await store.get_run("alice", "r1")
        assert live is not None and live.driven and live.effective_status == "running"
        with pytest.raises(RunBusy) as busy:
            await store.acquire_lease("alice", "r1", owner="replica-b", ttl_s=LONG)
        assert busy.value.owner == "replica-a" and busy.value.expires_in_s is not None
        await store.save_result(lease, result(output="from a"))
        await store.append_event(lease, "node_finished", node_id="n1")
        await store.release_lease(lease)  # a clean stop: free at once
        released = await store.get_run("alice", "r1")
        assert released is not None and not released.driven and released.effective_status == "interrupted"
        taken = await store.acquire_lease("alice", "r1", owner="replica-b", ttl_s=LONG)
        assert taken is not None and taken.epoch == lease.epoch + 1
        for stale_write in (
            store.save_result(lease, result(node_id="n2", output="stale")),
            store.append_event(lease, "run_finished"),
            store.update_run(lease, RunUpdate(status="succeeded")),
            store.renew_lease(lease, LONG),
        ):
            with pytest.raises(LeaseLost):
                await stale_write
        assert [r.node_id for r in await store.results("alice", "r1")] == ["n1"]  # nothing of the stale driver
        assert [e.seq for e in await store.events("alice", "r1")] == [1]
        current = await store.get_run("alice", "r1")
        assert current is not None and current.status == "running" and current.lease_owner == "replica-b"
        renewed = await store.renew_lease(taken, LONG)
        assert renewed.epoch == taken.epoch and renewed.expires_at >= taken.expires_at
        await store.update_run(taken, RunUpdate(status="succeeded"))
        assert await store.acquire_lease("alice", "r1", owner="replica-c", ttl_s=LONG) is None  # finished

    with_run(make_store, body)


def test_an_expired_lease_reads_interrupted_and_may_be_taken_over(make_store: Callable[..., RunStore]) -> None:
    async def go() -> None:
        store = make_store()
        try:
            lease = await store.create_run(record(), owner="replica-a", ttl_s=0.2)
            await store.create_run(record("r2"), owner="replica-a", ttl_s=LONG)  # stays live
            await asyncio.sleep(0.5)  # the driver "died": no heartbeat
            expired = await store.get_run("alice", "r1")
            assert expired is not None and not expired.driven and expired.effective_status == "interrupted"
            assert await store.orphaned_runs(max_takeovers=3) == [("alice", "r1")]
            assert await store.orphaned_runs(max_takeovers=0) == []
            taken = await store.acquire_lease("alice", "r1", owner="replica-b", ttl_s=0.2, takeover=True)
            assert taken is not None and taken.epoch == lease.epoch + 1
            with pytest.raises(LeaseLost):
                await store.renew_lease(lease, LONG)  # the old driver's heartbeat is refused
            await asyncio.sleep(0.5)
            assert await store.orphaned_runs(max_takeovers=1) == []  # taken over once already
            assert await store.orphaned_runs(max_takeovers=2) == [("alice", "r1")]
        finally:
            await store.aclose()

    run(go())


def test_quotas_are_checked_when_a_run_is_created(make_store: Callable[..., RunStore]) -> None:
    async def go() -> None:
        store = make_store()
        try:
            quota = TenantQuota(max_active_runs=2, max_stored_runs=3, max_stored_bytes=10**9)
            first = await store.create_run(record("r1"), owner="a", ttl_s=LONG, quota=quota)
            await store.create_run(record("r2"), owner="a", ttl_s=LONG, quota=quota)
            with pytest.raises(TooManyActiveRuns):
                await store.create_run(record("r3"), owner="a", ttl_s=LONG, quota=quota)
            await store.create_run(record("b1", tenant="bob"), owner="a", ttl_s=LONG, quota=quota)  # bob's own
            await store.update_run(first, RunUpdate(status="succeeded"))
            third = await store.create_run(record("r3"), owner="a", ttl_s=LONG, quota=quota)
            await store.update_run(third, RunUpdate(status="failed"))
            with pytest.raises(StoredRunsQuota):
                await store.create_run(record("r4"), owner="a", ttl_s=LONG, quota=quota)
            usage = await store.usage("alice")
            assert (usage.active_runs, usage.stored_runs) == (1, 3) and usage.stored_bytes > 0
            tiny = TenantQuota(max_active_runs=10, max_stored_runs=10, max_stored_bytes=usage.stored_bytes)
            with pytest.raises(StoredBytesQuota):
                await store.create_run(record("r5"), owner="a", ttl_s=LONG, quota=tiny)
            assert await store.get_run("alice", "r4") is None and await store.get_run("alice", "r5") is None
        finally:
            await store.aclose()

    run(go())


def test_purge_by_age_and_total_size_spares_live_runs(make_store: Callable[..., RunStore]) -> None:
    async def go() -> None:
        store = make_store()
        try:
            for name in ("old1", "old2", "new1"):
                lease = await store.create_run(record(name), owner="a", ttl_s=LONG)
                await store.save_result(lease, result(output="x" * 2000))
                await store.update_run(lease, RunUpdate(status="succeeded"))
            await store.create_run(record("live"), owner="a", ttl_s=LONG)  # executing: never purged
            await asyncio.sleep(0.3)
            young = await store.create_run(record("young"), owner="a", ttl_s=LONG)
            await store.update_run(young, RunUpdate(status="failed"))
            report = await store.purge(max_age_s=0.2, max_total_bytes=10**9)  # everything older than 0.2 s
            assert report.runs_deleted == 3 and report.bytes_freed > 6000
            assert {r.run_id for r in await store.list_runs("alice")} == {"live", "young"}
            report = await store.purge(max_age_s=3600, max_total_bytes=1)  # over size: oldest idle first
            assert report.runs_deleted == 1 and [r.run_id for r in await store.list_runs("alice")] == ["live"]
            assert report.total_bytes_after > 0  # the live run's bytes remain
        finally:
            await store.aclose()

    run(go())


def test_cache_is_tenant_scoped_with_ttl(make_store: Callable[..., RunStore]) -> None:
    async def go() -> None:
        store = make_store()
        try:
            await store.cache_put("plans", "alice", "k", "alice's plan", ttl_s=LONG)
            await store.cache_put("plans", "bob", "k", "bob's plan", ttl_s=LONG)
            await store.cache_put("demos", "alice", "k", "a demo", ttl_s=LONG)
            assert await store.cache_get("plans", "alice", "k") == "alice's plan"
            assert await store.cache_get("plans", "bob", "k") == "bob's plan"
            assert await store.cache_get("plans", "carol", "k") is None
            await store.cache_put("plans", "alice", "k", "newer", ttl_s=LONG)
            assert await store.cache_get("plans", "alice", "k") == "newer"
            await store.cache_put("plans", "alice", "short", "soon gone", ttl_s=0.1)
            await asyncio.sleep(0.3)
            assert await store.cache_get("plans", "alice", "short") is None
            report = await store.purge(max_age_s=3600, max_total_bytes=10**9)
            assert report.cache_entries_deleted == 1 and await store.cache_get("demos", "alice", "k") == "a demo"
            for bad in (("", "alice", "k", "v", 1.0), ("plans", "", "k", "v", 1.0), ("plans", "a", "k" * 600, "v", 1.0),
                        ("plans", "a", "k", "v", 0.0)):  # fmt: skip
                with pytest.raises(ValueError):
                    await store.cache_put(*bad)
        finally:
            await store.aclose()

    run(go())


def test_followers_wake_on_their_run_only_even_from_another_store(make_store: Callable[..., RunStore]) -> None:
    """A second store object on the same database plays another gateway process."""

    async def go() -> None:
        driver, follower = make_store(), make_store()
        try:
            lease = await driver.create_run(record("r1"), owner="a", ttl_s=LONG)
            other = await driver.create_run(record("r2"), owner="a", ttl_s=LONG)
            with follower.subscribe("r1") as mine, follower.subscribe("r2") as idle:
                # PostgreSQL: events appended before the listener's LISTEN are not announced to it (its
                # start-up re-read wakes everyone once); wait for it so the counts below are the events'
                await asyncio.wait_for(follower.feed.wait_live(), timeout=10)
                for sub in (mine, idle):
                    if sub.wakeups:
                        await sub.wait()
                idle_before = idle.wakeups
                for _ in range(3):
                    await driver.append_event(other, "node_started")  # not r1's business
                await driver.append_event(lease, "run_started")
                await asyncio.wait_for(mine.wait(), timeout=10)
                seen = await follower.events("alice", "r1")
                assert [e.type for e in seen] == ["run_started"]
                assert idle.wakeups > idle_before  # r2's follower did wake for r2 (its events came first)
                woken = mine.wakeups
                await driver.append_event(other, "node_finished")
                await asyncio.wait_for(idle.wait(), timeout=10)
                assert mine.wakeups == woken  # r1's follower slept through r2's event
        finally:
            await driver.aclose()
            await follower.aclose()

    run(go())

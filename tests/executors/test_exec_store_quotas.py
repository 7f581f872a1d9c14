"""The tenant caps of the RunStore beyond a run's creation, on both backends (SQLite file, real
PostgreSQL): a run moved back to `running` (out of a pause, out of an escalation, resumed after its
driver died) is counted against the active-runs cap in the same transaction; cache entries (the
gateway's plan records) count toward their tenant's stored bytes — with what the tenant keeps outside
the store — and toward the retention total, which purges them oldest first with the runs; no entry
outlives the retention age."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from exec_helpers import plan_of, run

from executors.stores import (
    Lease,
    ReopenFrom,
    RunRecord,
    RunStore,
    RunUpdate,
    StoredBytesQuota,
    TenantQuota,
    TooManyActiveRuns,
)

PLAN = plan_of({"id": "n1", "tool": "echo", "args": {"label": "a"}})
LONG = 30.0
ONE_ACTIVE = TenantQuota(max_active_runs=1, max_stored_runs=100, max_stored_bytes=10**9)
StoreFactory = Callable[..., RunStore]


def record(run_id: str, tenant: str = "alice") -> RunRecord:
    return RunRecord(run_id=run_id, tenant=tenant, request="trip", plan=PLAN)


async def reopen(store: RunStore, run_id: str, expect: ReopenFrom) -> Lease | None:
    return await store.reopen("alice", run_id, owner="b", ttl_s=LONG, expect=expect, update=RunUpdate(), quota=ONE_ACTIVE)


def test_a_run_moved_back_to_running_must_fit_the_active_runs_cap(make_store: StoreFactory) -> None:
    async def go() -> None:
        store = make_store()
        try:
            paused = await store.create_run(record("paused"), owner="a", ttl_s=LONG, quota=ONE_ACTIVE)
            await store.update_run(paused, RunUpdate(status="awaiting_approval"))
            await store.release_lease(paused)
            escalated = await store.create_run(record("escalated"), owner="a", ttl_s=LONG, quota=ONE_ACTIVE)
            await store.update_run(escalated, RunUpdate(status="failed", escalation={"state": "open"}))
            await store.release_lease(escalated)
            orphan = await store.create_run(record("orphan"), owner="a", ttl_s=0.2, quota=ONE_ACTIVE)
            await asyncio.sleep(0.4)  # its driver died: interrupted, not counted as executing
            busy = await store.create_run(record("busy"), owner="a", ttl_s=LONG, quota=ONE_ACTIVE)
            await store.create_run(record("bobs", tenant="bob"), owner="a", ttl_s=LONG, quota=ONE_ACTIVE)
            assert (await store.usage("alice")).active_runs == 1

            with pytest.raises(TooManyActiveRuns):
                await reopen(store, "paused", "awaiting_approval")
            with pytest.raises(TooManyActiveRuns):
                await reopen(store, "escalated", "escalated")
            with pytest.raises(TooManyActiveRuns):
                await store.acquire_lease("alice", "orphan", owner="b", ttl_s=LONG, quota=ONE_ACTIVE)
            states = {r.run_id: r.effective_status for r in await store.list_runs("alice")}
            assert states == {"paused": "awaiting_approval", "escalated": "failed", "orphan": "interrupted",
                              "busy": "running"}  # fmt: skip  # nothing changed
            # not in the expected state any more: None (someone else was first), whatever the cap
            assert await reopen(store, "busy", "awaiting_approval") is None

            await store.update_run(busy, RunUpdate(status="succeeded"))  # one executing run fewer
            lease = await reopen(store, "paused", "awaiting_approval")
            assert lease is not None and (await store.usage("alice")).active_runs == 1
            with pytest.raises(TooManyActiveRuns):  # the reopened run counts now
                await store.acquire_lease("alice", "orphan", owner="b", ttl_s=LONG, quota=ONE_ACTIVE)
            # without a quota (the takeover sweep finishing what was already executing) nothing is checked
            taken = await store.acquire_lease("alice", "orphan", owner="b", ttl_s=LONG, takeover=True)
            assert taken is not None and taken.epoch == orphan.epoch + 1
        finally:
            await store.aclose()

    run(go())


def test_cache_entries_count_toward_the_tenant_s_stored_bytes(make_store: StoreFactory) -> None:
    async def go() -> None:
        store = make_store()
        try:
            value = "x" * 10_000
            entry = len("plans") + len("alice") + len("plan_0") + len(value)  # what one entry costs
            await store.create_run(record("r1"), owner="a", ttl_s=LONG)
            runs_only = await store.usage("alice")
            assert runs_only.cache_bytes == 0
            for i in range(5):
                await store.cache_put("plans", "alice", f"plan_{i}", value, LONG)
            await store.cache_put("plans", "bob", "plan_0", value, LONG)
            usage = await store.usage("alice")
            assert usage.cache_bytes == 5 * entry  # alice's five, not bob's
            assert usage.stored_bytes == runs_only.stored_bytes + usage.cache_bytes

            cap = usage.stored_bytes + 5_000
            quota = TenantQuota(max_active_runs=10, max_stored_runs=10, max_stored_bytes=cap)
            await store.cache_put("plans", "alice", "plan_5", value, LONG, quota=quota)  # under: stored (and past)
            with pytest.raises(StoredBytesQuota):  # the tenant keeps its cap: nothing more
                await store.cache_put("plans", "alice", "plan_6", value, LONG, quota=quota)
            with pytest.raises(StoredBytesQuota):  # nor a new run
                await store.create_run(record("r2"), owner="a", ttl_s=LONG, quota=quota)
            assert await store.cache_get("plans", "alice", "plan_6") is None
            await store.cache_put("plans", "bob", "plan_1", value, LONG, quota=quota)  # bob has his own
            roomy = TenantQuota(max_active_runs=10, max_stored_runs=10, max_stored_bytes=cap + 20_000)
            await store.cache_put("plans", "alice", "plan_6", value, LONG, quota=roomy)
            outside = TenantQuota(max_active_runs=10, max_stored_runs=10, max_stored_bytes=cap + 20_000,
                                  outside_bytes=20_000)  # fmt: skip  # e.g. its demonstrations
            with pytest.raises(StoredBytesQuota) as refused:
                await store.cache_put("plans", "alice", "plan_7", value, LONG, quota=outside)
            assert "outside the store 20000" in refused.value.message

            await store.cache_put("plans", "alice", "brief", value, 0.2)  # expired entries count for nobody
            await asyncio.sleep(0.4)
            assert (await store.usage("alice")).cache_bytes == 7 * entry
        finally:
            await store.aclose()

    run(go())


def test_the_retention_total_counts_cache_entries_and_purges_the_oldest_first(make_store: StoreFactory) -> None:
    async def go() -> None:
        store = make_store()
        try:
            value = "y" * 20_000
            await store.cache_put("plans", "alice", "oldest", value, LONG)
            old = await store.create_run(record("old"), owner="a", ttl_s=LONG)
            await store.update_run(old, RunUpdate(status="succeeded"))
            await asyncio.sleep(0.05)
            await store.cache_put("plans", "bob", "middle", value, LONG)
            await asyncio.sleep(0.01)
            await store.cache_put("plans", "alice", "newer", value, LONG)
            await asyncio.sleep(0.05)
            await store.create_run(record("live"), owner="a", ttl_s=LONG)  # executing: never purged
            await store.cache_put("plans", "alice", "newest", value, LONG)
            total = (await store.usage("alice")).stored_bytes + (await store.usage("bob")).stored_bytes

            report = await store.purge(max_age_s=3600, max_total_bytes=total - 30_000)  # two entries' worth
            assert report.cache_entries_deleted == 2 and report.runs_deleted == 1  # oldest, the old run, middle
            assert report.bytes_freed > 40_000 and report.total_bytes_after <= total - 30_000
            kept = [k for k in ("oldest", "newer", "newest") if await store.cache_get("plans", "alice", k)]
            assert kept == ["newer", "newest"] and await store.cache_get("plans", "bob", "middle") is None
            assert [r.run_id for r in await store.list_runs("alice")] == ["live"]
        finally:
            await store.aclose()

    run(go())


def test_no_cache_entry_outlives_the_retention_age(make_store: StoreFactory) -> None:
    async def go() -> None:
        store = make_store(retention_max_age_s=0.3)
        try:
            await store.cache_put("plans", "alice", "p", "a plan record", ttl_s=7 * 86400.0)  # asks for 7 days
            assert await store.cache_get("plans", "alice", "p") == "a plan record"
            await asyncio.sleep(0.5)
            assert await store.cache_get("plans", "alice", "p") is None
            assert (await store.purge(max_age_s=0.3, max_total_bytes=10**9)).cache_entries_deleted == 1
        finally:
            await store.aclose()

    run(go())

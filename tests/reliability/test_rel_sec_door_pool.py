"""Issue 19, item 2: the door's expensive checks run off the event loop, in a bounded pool with a
deadline and a fair share per tenant (serving/door). Real worker processes (spawned, loopback pipes);
the jobs are tests/reliability/door_jobs.py. Ordering is asserted from the jobs' own start times, so
the checks do not depend on how fast this shared machine is."""

from __future__ import annotations

import asyncio
import os

import pytest

from serving.door import CheckTimeoutError, DoorPool
from serving.door.fair import FairShare
from serving.errors import RateLimitError
from serving.settings import DoorSettings
from tests.reliability.door_jobs import raise_value_error, started_sleeping

pytestmark = pytest.mark.timeout(300)


def test_a_tenants_waiters_queue_behind_each_other_and_tenants_take_turns() -> None:
    async def scenario() -> list[str]:
        share = FairShare(1, 1, max_waiting=10, max_waiting_per_tenant=5)
        order: list[str] = []

        async def job(tenant: str, name: str) -> None:
            await share.acquire(tenant, 5)
            order.append(name)
            await asyncio.sleep(0.01)
            share.release(tenant)

        first = asyncio.create_task(job("A", "A1"))
        await asyncio.sleep(0)
        a_rest = [asyncio.create_task(job("A", f"A{i}")) for i in range(2, 5)]
        await asyncio.sleep(0)
        b = asyncio.create_task(job("B", "B1"))
        await asyncio.gather(first, *a_rest, b)
        return order

    order = asyncio.run(scenario())
    assert order[:3] == ["A1", "A2", "B1"], order  # B waits for one of A's jobs, not for all of them


def test_waiting_is_bounded_per_tenant_and_in_all() -> None:
    async def scenario() -> tuple[int, int]:
        share = FairShare(1, 1, max_waiting=3, max_waiting_per_tenant=2)
        await share.acquire("A", 1)  # running
        waiters = [asyncio.create_task(share.acquire("A", 5)) for _ in range(2)]
        await asyncio.sleep(0)
        with pytest.raises(RateLimitError) as own:
            await share.acquire("A", 5)
        waiters.append(asyncio.create_task(share.acquire("B", 5)))
        await asyncio.sleep(0)
        with pytest.raises(RateLimitError):
            await share.acquire("C", 5)  # three waiting in all
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
        assert own.value.retry_after_s == 1
        return share.waiting(), share.running()

    assert asyncio.run(scenario()) == (0, 1)


def test_a_turn_not_granted_in_time_times_out_and_leaves_no_trace() -> None:
    async def scenario() -> tuple[int, int]:
        share = FairShare(1, 1, max_waiting=3, max_waiting_per_tenant=2)
        await share.acquire("A", 1)
        with pytest.raises(TimeoutError):
            await share.acquire("B", 0.05)
        share.release("A")
        await share.acquire("B", 0.05)  # the timed-out waiter did not keep a place
        return share.waiting(), share.running("B")

    assert asyncio.run(scenario()) == (0, 1)


def test_jobs_run_in_worker_processes_fairly_and_past_the_deadline_get_a_503() -> None:
    async def scenario() -> None:
        pool = DoorPool(DoorSettings(workers=2, per_tenant=1, deadline_s=3.0, nice=0))
        try:
            await pool.run("A", started_sleeping, 0.0)  # starts both workers
            for _ in range(600):
                if len(pool.worker_pids()) == 2:
                    break
                await asyncio.sleep(0.1)
            pids = set(pool.worker_pids())
            assert len(pids) == 2 and os.getpid() not in pids
            a1 = asyncio.create_task(pool.run("A", started_sleeping, 1.0))
            await asyncio.sleep(0.05)
            a2 = asyncio.create_task(pool.run("A", started_sleeping, 0.0))
            b1 = asyncio.create_task(pool.run("B", started_sleeping, 0.0))
            started_a1, started_a2, started_b1 = await asyncio.gather(a1, a2, b1)
            assert started_b1 < started_a1 + 1.0 <= started_a2 + 0.05  # B ran beside A1; A2 after it
            with pytest.raises(ValueError, match="the job's own error"):
                await pool.run("A", raise_value_error, "the job's own error")
            with pytest.raises(CheckTimeoutError) as late:
                await pool.run("A", started_sleeping, 10.0)
            assert late.value.status == 503 and late.value.retry_after_s == 1
            await asyncio.sleep(0.5)
            assert await pool.run("A", started_sleeping, 0.0) > 0  # a fresh worker took the killed one's place
            assert pids - set(pool.worker_pids()), "the worker past its deadline was killed"
        finally:
            pool.close()

    asyncio.run(scenario())


def test_the_thread_kind_runs_the_same_jobs() -> None:
    async def scenario() -> None:
        pool = DoorPool(DoorSettings(workers=1, kind="thread", deadline_s=0.5))
        try:
            assert await pool.run("A", started_sleeping, 0.0) > 0
            with pytest.raises(CheckTimeoutError):
                await pool.run("A", started_sleeping, 2.0)
        finally:
            pool.close()

    asyncio.run(scenario())

"""UpstreamSlots: a global bound, a per-tenant share, refusal at once or after a bounded wait."""

from __future__ import annotations

import asyncio

import pytest

from serving.backpressure import UpstreamSlots
from serving.errors import RateLimitError, error_body
from serving.metrics import GatewayMetrics


def rejected(metrics: GatewayMetrics, reason: str) -> float:
    value = metrics.registry.get_sample_value("planstack_upstream_rejected_total", {"reason": reason})
    return value or 0.0


def test_one_tenant_gets_its_share_and_the_others_the_rest() -> None:
    metrics = GatewayMetrics()
    slots = UpstreamSlots(limit=4, per_tenant=2, metrics=metrics)

    async def go() -> None:
        await slots.acquire("a")
        await slots.acquire("a")
        with pytest.raises(RateLimitError) as refused:
            await slots.acquire("a")
        assert error_body(refused.value)[0] == 429 and error_body(refused.value)[2] == {"Retry-After": "1"}
        await slots.acquire("b")
        await slots.acquire("b")
        with pytest.raises(RateLimitError):  # every slot is taken now: a third tenant is refused too
            await slots.acquire("c")
        with pytest.raises(RateLimitError):
            await slots.acquire(None)
        slots.release("a")
        await slots.acquire("c")  # a freed slot goes to whoever asks within its share

    asyncio.run(go())
    assert slots.in_flight() == 4 and slots.in_flight("a") == 1 and slots.in_flight("c") == 1
    assert rejected(metrics, "tenant") == 1 and rejected(metrics, "global") == 2
    assert metrics.registry.get_sample_value("planstack_upstream_in_flight") == 4


def test_a_share_above_the_limit_is_capped_at_the_limit() -> None:
    assert UpstreamSlots(limit=3, per_tenant=10).per_tenant == 3


def test_a_waiting_caller_gets_the_next_slot_of_its_share() -> None:
    slots = UpstreamSlots(limit=4, per_tenant=1)

    async def go() -> list[str]:
        order: list[str] = []
        await slots.acquire("a")

        async def waiter() -> None:
            await slots.acquire("a", wait_s=10)
            order.append("waiter got it")

        task = asyncio.create_task(waiter())
        await asyncio.sleep(0.05)
        await slots.acquire("b")  # another tenant's release does not free a's share
        slots.release("b")
        await asyncio.sleep(0.05)
        assert not task.done()
        order.append("a released")
        slots.release("a")
        await asyncio.wait_for(task, 5)
        return order

    assert asyncio.run(go()) == ["a released", "waiter got it"]
    assert slots.in_flight("a") == 1


def test_a_wait_is_bounded_in_time_and_in_waiters() -> None:
    slots = UpstreamSlots(limit=1, per_tenant=1)

    async def go() -> None:
        await slots.acquire("a")
        with pytest.raises(RateLimitError):
            await slots.acquire("a", wait_s=0.1)
        waiting = asyncio.create_task(slots.acquire("b", wait_s=10))
        await asyncio.sleep(0.05)
        with pytest.raises(RateLimitError):  # no more waiters than slots: refused at once
            await slots.acquire("c", wait_s=10)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(go())
    assert slots.in_flight() == 1  # the cancelled waiter took nothing


def test_held_releases_on_error() -> None:
    slots = UpstreamSlots(limit=1, per_tenant=1)

    async def go() -> None:
        with pytest.raises(ValueError):
            async with slots.held("a"):
                raise ValueError("the engine call failed")

    asyncio.run(go())
    assert slots.in_flight() == 0 and slots.in_flight("a") == 0

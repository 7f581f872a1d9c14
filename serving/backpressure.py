"""Bounded, fair slots for every request to the engine: chat, planner and re-planner alike.

At most `limit` requests are in flight to the engine, and at most `per_tenant` of them for any one
tenant, so one tenant flooding the gateway gets 429s past its share while the others still find
slots. A full gateway answers at once (`RateLimitError`, 429 + Retry-After) — never an unbounded
queue. A caller with no client waiting on it (a run's re-planning) may instead wait up to a bounded
time for a slot; the waiters are bounded too.

A chat request holds its slot for one engine call. A planning request is admitted once, before any
planner work (`admitted`), and its several engine calls run on that one slot: a refused plan costs
the gateway nothing, and the engine calls inside it know their tenant (`admission`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass

from serving.errors import RateLimitError
from serving.metrics import GatewayMetrics

RETRY_AFTER_S = 1


@dataclass(frozen=True)
class Admission:
    """A slot this task holds for `tenant` on `slots` for a whole unit of work (a planning request)."""

    slots: UpstreamSlots
    tenant: str | None


_admission: ContextVar[Admission | None] = ContextVar("planstack_engine_admission", default=None)


def admission() -> Admission | None:
    """The admission the current task runs under, if any."""
    return _admission.get()


class UpstreamSlots:
    def __init__(
        self, limit: int, per_tenant: int, metrics: GatewayMetrics | None = None, *, what: str = "to the engine"
    ) -> None:
        self.limit = limit
        self.per_tenant = min(per_tenant, limit)
        self._metrics = metrics
        self._what = what  # what the slots are for, in the 429's message
        self._in_flight = 0
        self._by_tenant: Counter[str] = Counter()
        self._waiters: list[asyncio.Future[None]] = []

    def in_flight(self, tenant: str | None = None) -> int:
        return self._in_flight if tenant is None else self._by_tenant[tenant]

    def _refusal(self, tenant: str | None) -> str | None:
        """Why `tenant` cannot take a slot now ('tenant': its share is used, else 'global': every
        slot is), or None when it can."""
        if tenant is not None and self._by_tenant[tenant] >= self.per_tenant:
            return "tenant"
        if self._in_flight >= self.limit:
            return "global"
        return None

    def _take(self, tenant: str | None) -> None:
        self._in_flight += 1
        if tenant is not None:
            self._by_tenant[tenant] += 1
        if self._metrics is not None:
            self._metrics.in_flight.inc()

    def _reject(self, reason: str) -> RateLimitError:
        if self._metrics is not None:
            self._metrics.upstream_rejected.labels(reason).inc()
        what = self._what if reason == "global" else f"{self._what} for this tenant"
        return RateLimitError(f"too many requests in flight {what}", retry_after_s=RETRY_AFTER_S)

    async def acquire(self, tenant: str | None, *, wait_s: float = 0.0) -> None:
        """Take a slot for `tenant` (None: a caller outside any tenant, bounded by the total only);
        RateLimitError when none is free within `wait_s` seconds (0: at once)."""
        reason = self._refusal(tenant)
        if reason is None:
            self._take(tenant)
            return
        if wait_s <= 0 or len(self._waiters) >= self.limit:
            raise self._reject(reason)
        deadline = time.monotonic() + wait_s
        while (reason := self._refusal(tenant)) is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._reject(reason)
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await asyncio.wait_for(waiter, left)
            except TimeoutError:
                pass
            finally:
                self._waiters.remove(waiter)
        self._take(tenant)

    def release(self, tenant: str | None) -> None:
        self._in_flight -= 1
        if tenant is not None:
            self._by_tenant[tenant] -= 1
            if self._by_tenant[tenant] <= 0:
                del self._by_tenant[tenant]
        if self._metrics is not None:
            self._metrics.in_flight.dec()
        for waiter in self._waiters:  # each re-checks its own tenant's share
            if not waiter.done():
                waiter.set_result(None)

    @contextlib.asynccontextmanager
    async def held(self, tenant: str | None, *, wait_s: float = 0.0) -> AsyncIterator[None]:
        await self.acquire(tenant, wait_s=wait_s)
        try:
            yield
        finally:
            self.release(tenant)

    def holds(self, tenant: str | None) -> bool:
        """Whether the current task already runs under an admission of `tenant` on these slots."""
        current = _admission.get()
        return current is not None and current.slots is self and current.tenant == tenant

    @contextlib.asynccontextmanager
    async def admitted(self, tenant: str | None, *, wait_s: float = 0.0) -> AsyncIterator[Admission]:
        """Hold one slot for `tenant` for the whole block; engine calls made inside it (in this task
        and the tasks it starts) use that slot instead of taking another."""
        if self.holds(tenant):
            yield Admission(self, tenant)
            return
        async with self.held(tenant, wait_s=wait_s):
            token = _admission.set(Admission(self, tenant))
            try:
                yield Admission(self, tenant)
            finally:
                _admission.reset(token)

"""A fair share of a few workers between tenants: one tenant's heavy requests queue behind each other.

At most `total` jobs run at once and at most `per_tenant` of one tenant; the others wait in their
tenant's own queue, and a freed worker goes to the next tenant in turn (round robin), so a tenant
with forty waiting jobs delays another tenant's single job by at most one job per worker, never by
forty. Waiting is bounded too: past `max_waiting` waiters in all, or `max_waiting_per_tenant` of one
tenant, a request is refused at once (429 + Retry-After) instead of joining a queue.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque

from serving.errors import RateLimitError


class FairShare:
    def __init__(self, total: int, per_tenant: int, *, max_waiting: int, max_waiting_per_tenant: int) -> None:
        self.total = total
        self.per_tenant = min(per_tenant, total)
        self.max_waiting = max_waiting
        self.max_waiting_per_tenant = max_waiting_per_tenant
        self._running: Counter[str] = Counter()
        self._queues: dict[str, deque[asyncio.Future[None]]] = {}
        self._turns: deque[str] = deque()  # tenants with waiters, in the order they are served

    def running(self, tenant: str | None = None) -> int:
        return sum(self._running.values()) if tenant is None else self._running[tenant]

    def waiting(self, tenant: str | None = None) -> int:
        if tenant is None:
            return sum(len(queue) for queue in self._queues.values())
        return len(self._queues.get(tenant, ()))

    def _can_run(self, tenant: str) -> bool:
        return self.running() < self.total and self._running[tenant] < self.per_tenant

    async def acquire(self, tenant: str, timeout_s: float) -> None:
        """A turn for `tenant` within `timeout_s` (TimeoutError otherwise); RateLimitError at once
        when too many are waiting."""
        if self._can_run(tenant) and not self._queues.get(tenant):
            self._running[tenant] += 1
            return
        if self.waiting() >= self.max_waiting or self.waiting(tenant) >= self.max_waiting_per_tenant:
            whose = "this tenant's" if self.waiting(tenant) >= self.max_waiting_per_tenant else "the gateway's"
            raise RateLimitError(f"too many requests are waiting for {whose} request checks; retry shortly",
                                 retry_after_s=1)  # fmt: skip
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(tenant, deque()).append(turn)
        if tenant not in self._turns:
            self._turns.append(tenant)
        try:
            await asyncio.wait_for(asyncio.shield(turn), timeout_s)
        except BaseException:  # timed out, or the client went away
            if turn.done() and not turn.cancelled():
                self.release(tenant)  # granted just as we gave up: pass the turn on
            else:
                turn.cancel()
                self._forget(tenant, turn)
            raise

    def release(self, tenant: str) -> None:
        self._running[tenant] -= 1
        if self._running[tenant] <= 0:
            del self._running[tenant]
        self._dispatch()

    def _forget(self, tenant: str, turn: asyncio.Future[None]) -> None:
        queue = self._queues.get(tenant)
        if queue is not None and turn in queue:
            queue.remove(turn)
        if queue is not None and not queue:
            del self._queues[tenant]
            if tenant in self._turns:
                self._turns.remove(tenant)

    def _dispatch(self) -> None:
        """Hand free turns to waiting tenants, one tenant after the other."""
        passed = 0
        while self._turns and self.running() < self.total and passed < len(self._turns):
            tenant = self._turns[0]
            self._turns.rotate(-1)
            queue = self._queues[tenant]
            if self._running[tenant] >= self.per_tenant:
                passed += 1
                continue
            turn = queue.popleft()
            if not turn.done():  # a waiter that gave up is skipped
                self._running[tenant] += 1
                turn.set_result(None)
                passed = 0
            if not queue:
                del self._queues[tenant]
                self._turns.remove(tenant)

"""Bounded followers of `/v1/runs/{id}/events`: per tenant and in total, per gateway process.

A follower holds one slot from before its stream starts (so a refusal is a plain 429, not an error
inside a stream) until the response ends, however it ends: `FollowerStream` releases the slot when
the ASGI call returns, also when the client disconnects before the first byte.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from serving.errors import RateLimitError


class TooManyFollowersError(RateLimitError):
    code = "too_many_followers"


class FollowerSlot:
    def __init__(self, slots: FollowerSlots, tenant: str) -> None:
        self._slots = slots
        self._tenant = tenant
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._slots._release(self._tenant)


class FollowerSlots:
    def __init__(self, *, per_tenant: int, total: int) -> None:
        self.per_tenant = per_tenant
        self.total = total
        self._by_tenant: Counter[str] = Counter()

    @property
    def in_use(self) -> int:
        return sum(self._by_tenant.values())

    def acquire(self, tenant: str) -> FollowerSlot:
        if self._by_tenant[tenant] >= self.per_tenant:
            raise TooManyFollowersError(
                f"this tenant already follows {self.per_tenant} runs on this gateway", retry_after_s=5
            )
        if self.in_use >= self.total:
            raise TooManyFollowersError(f"this gateway already serves {self.total} event streams", retry_after_s=5)
        self._by_tenant[tenant] += 1
        return FollowerSlot(self, tenant)

    def _release(self, tenant: str) -> None:
        self._by_tenant[tenant] -= 1
        if self._by_tenant[tenant] <= 0:
            del self._by_tenant[tenant]


class FollowerStream(StreamingResponse):
    """An SSE response that gives its follower slot back when it ends, however it ends."""

    def __init__(self, content: Any, slot: FollowerSlot, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._slot.release()

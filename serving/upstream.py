"""Client of the vLLM engine's OpenAI server: the ONE client of all engine traffic (chat relay,
planner, re-planner), and the one place where engine failures become typed errors.

Every request holds one of the bounded, per-tenant `UpstreamSlots` while it is in flight (429 when
none is free). Connection failures become 503 (with Retry-After), timeouts 504, and engine error
bodies are relayed with their status and message (never their internals). The relay is the
gateway's hot path, so it uses aiohttp (measured here: about half the per-request cost of httpx);
its connection pool is made inside the running event loop on first use and closed by the stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator
from typing import Any

import aiohttp

from serving.backpressure import UpstreamSlots
from serving.errors import EngineTimeoutError, EngineUnavailableError, PlanstackError, UpstreamError
from serving.metrics import GatewayMetrics
from serving.routing import DIRECT, EngineRouting

RETRY_AFTER_S = 5


def _upstream_error(response_status: int, content: bytes) -> UpstreamError:
    message, param, code = f"engine returned HTTP {response_status}", None, None
    try:
        payload = json.loads(content)
        error = payload.get("error", payload) if isinstance(payload, dict) else {}
        if isinstance(error, dict):
            message = str(error.get("message") or message)[:2000]
            param = error.get("param") if isinstance(error.get("param"), str) else None
            code = str(error["code"]) if error.get("code") is not None else None
    except (ValueError, AttributeError):
        pass
    return UpstreamError(response_status, message, param=param, code=code)


class EngineClient:
    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float,
        connect_timeout_s: float,
        slots: UpstreamSlots,
        metrics: GatewayMetrics | None = None,
        api_key: str | None = None,
        routing: EngineRouting = DIRECT,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}  # the engine's key
        self._routing = routing
        self.slots = slots
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._max_connections = slots.limit + 8  # spare connections: health checks never wait behind a flood
        self._metrics = metrics
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            # A session belongs to the loop it was made in (a new loop, e.g. a restarted app, gets its own).
            self._loop = loop
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections),
                timeout=aiohttp.ClientTimeout(total=self._timeout_s, sock_connect=self._connect_timeout_s),
                headers=self._headers,
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _count(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.upstream_failures.labels(reason).inc()

    def _translate(self, exc: BaseException) -> PlanstackError:
        connect_failed = isinstance(exc, aiohttp.ConnectionTimeoutError | aiohttp.ClientConnectorError)
        if isinstance(exc, TimeoutError) and not connect_failed:
            self._count("timeout")
            return EngineTimeoutError("the engine did not answer in time")
        self._count("unavailable")
        return EngineUnavailableError(
            "the engine is not reachable", hint="it may be starting or restarting", retry_after_s=RETRY_AFTER_S
        )

    async def _error(self, response: aiohttp.ClientResponse) -> UpstreamError:
        if response.status >= 500:
            self._count("status_5xx")
        return _upstream_error(response.status, await response.read())

    def _slot(self, tenant: str | None) -> contextlib.AbstractAsyncContextManager[object]:
        """One of `tenant`'s slots for this call, unless the task was admitted already (a planning request)."""
        return contextlib.nullcontext() if self.slots.holds(tenant) else self.slots.held(tenant)

    def request_headers(self, *, tenant: str | None, body: dict[str, Any]) -> dict[str, str]:
        """The headers of one engine request (`body` carries the server-side `cache_salt`): the one
        place where per-request headers, such as a router affinity header, are added."""
        return self._routing.headers(body)

    async def post_json(self, path: str, body: dict[str, Any], *, tenant: str | None) -> bytes:
        """POST a JSON body for `tenant` (holding one of its slots); the raw response bytes on 2xx,
        a typed error otherwise (429 at once when no slot is free)."""
        async with self._slot(tenant):
            headers = self.request_headers(tenant=tenant, body=body)
            try:
                async with self._client().post(self.base_url + path, json=body, headers=headers) as response:
                    if response.status >= 400:
                        raise await self._error(response)
                    return await response.read()
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise self._translate(exc) from exc

    async def stream(self, path: str, body: dict[str, Any], *, tenant: str | None) -> AsyncGenerator[bytes, None]:
        """POST for `tenant` and relay a server-sent-event stream chunk by chunk; the slot is held
        until the stream ends or is closed.

        Errors before the first byte raise (the caller still can send a plain error response);
        errors after it raise too, and the caller turns them into a final error event. The timeout
        applies between chunks, not to the whole stream.
        """
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout_s, sock_read=self._timeout_s)
        async with self._slot(tenant):
            headers = self.request_headers(tenant=tenant, body=body)
            try:
                async with self._client().post(
                    self.base_url + path, json=body, headers=headers, timeout=timeout
                ) as response:
                    if response.status >= 400:
                        raise await self._error(response)
                    async for chunk in response.content.iter_any():
                        yield chunk
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise self._translate(exc) from exc

    async def healthy(self) -> bool:
        try:
            timeout = aiohttp.ClientTimeout(total=2.0)
            async with self._client().get(self.base_url + self._routing.health_path, timeout=timeout) as response:
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

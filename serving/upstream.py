"""Client of the vLLM engine's OpenAI server: the one place where engine failures become typed errors.

Connection failures become 503 (with Retry-After), timeouts 504, and engine error bodies are relayed
with their status and message (never their internals). The relay is the gateway's hot path, so it
uses aiohttp (measured here: about half the per-request cost of httpx); its connection pool is made
inside the running event loop on first use and closed by the app's lifespan.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

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
        max_connections: int,
        metrics: GatewayMetrics | None = None,
        api_key: str | None = None,
        routing: EngineRouting = DIRECT,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}  # the engine's key
        self._routing = routing
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._max_connections = max_connections
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

    async def post_json(self, path: str, body: dict[str, Any]) -> bytes:
        """POST a JSON body; the raw response bytes on 2xx, a typed error otherwise."""
        try:
            headers = self._routing.headers(body)
            async with self._client().post(self.base_url + path, json=body, headers=headers) as response:
                if response.status >= 400:
                    raise await self._error(response)
                return await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._translate(exc) from exc

    async def stream(self, path: str, body: dict[str, Any]) -> AsyncIterator[bytes]:
        """POST and relay a server-sent-event stream chunk by chunk.

        Errors before the first byte raise (the caller still can send a plain error response);
        errors after it raise too, and the caller turns them into a final error event. The timeout
        applies between chunks, not to the whole stream.
        """
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout_s, sock_read=self._timeout_s)
        try:
            headers = self._routing.headers(body)
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

"""Client of the vLLM engine's OpenAI server: the one place where engine failures become typed errors.

Connection failures become 503 (with Retry-After), timeouts 504, and engine error bodies are relayed
with their status and message (never their internals). The httpx client is injected, so the gateway
owns its connection pool and tests can point it at a fake upstream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from serving.errors import EngineTimeoutError, EngineUnavailableError, PlanstackError, UpstreamError
from serving.metrics import GatewayMetrics

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
    def __init__(self, http: httpx.AsyncClient, base_url: str, metrics: GatewayMetrics | None = None) -> None:
        self._http = http
        self.base_url = base_url.rstrip("/")
        self._metrics = metrics

    def _count(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.upstream_failures.labels(reason).inc()

    def _fail(self, reason: str, exc: PlanstackError) -> PlanstackError:
        self._count(reason)
        return exc

    def _translate(self, exc: httpx.HTTPError) -> PlanstackError:
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            return self._fail("timeout", EngineTimeoutError("the engine did not answer in time"))
        return self._fail(
            "unavailable",
            EngineUnavailableError(
                "the engine is not reachable", hint="it may be starting or restarting", retry_after_s=RETRY_AFTER_S
            ),
        )

    async def post_json(self, path: str, body: dict[str, Any]) -> bytes:
        """POST a JSON body; the raw response bytes on 2xx, a typed error otherwise."""
        try:
            response = await self._http.post(self.base_url + path, json=body)
        except httpx.HTTPError as exc:
            raise self._translate(exc) from exc
        if response.status_code >= 400:
            if response.status_code >= 500:
                self._count("status_5xx")
            raise _upstream_error(response.status_code, response.content)
        return response.content

    async def stream(self, path: str, body: dict[str, Any]) -> AsyncIterator[bytes]:
        """POST and relay a server-sent-event stream chunk by chunk.

        Errors before the first byte raise (the caller still can send a plain error response);
        errors after it raise too, and the caller turns them into a final error event.
        """
        request = self._http.build_request("POST", self.base_url + path, json=body)
        try:
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._translate(exc) from exc
        try:
            if response.status_code >= 400:
                content = await response.aread()
                raise _upstream_error(response.status_code, content)
            async for chunk in response.aiter_raw():
                yield chunk
        except httpx.HTTPError as exc:
            raise self._translate(exc) from exc
        finally:
            await response.aclose()

    async def get(self, path: str, timeout_s: float | None = None) -> httpx.Response:
        try:
            return await self._http.get(self.base_url + path, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise self._translate(exc) from exc

    async def healthy(self) -> bool:
        try:
            response = await self._http.get(self.base_url + "/health", timeout=2.0)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

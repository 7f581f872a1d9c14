"""Chat completions relayed to the engine: limits, schema guard, server-side cache salt, streaming.

The router validates and delegates here; this service applies the gateway's rules in one place:
known model, prompt and token limits, no client `cache_salt`, response_format schemas checked by the
`SchemaGuard` before the engine sees them, back-pressure (429) when too many requests are in flight,
then the relay (whole body, or an SSE stream whose mid-stream errors become a final error event).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from serving.auth import Principal
from serving.errors import (
    InvalidRequestError,
    ModelNotFoundError,
    PlanstackError,
    RateLimitError,
    error_body,
)
from serving.isolation import CacheSalter
from serving.metrics import GatewayMetrics
from serving.protocol import ChatCompletionRequest
from serving.redaction import for_log
from serving.schema_guard import SchemaGuard
from serving.settings import Settings
from serving.upstream import EngineClient

logger = logging.getLogger("planstack.chat")


class UpstreamSlots:
    """Bounded count of requests in flight to the engine; full → 429 at once, never an unbounded queue."""

    def __init__(self, limit: int, metrics: GatewayMetrics) -> None:
        self._free = limit
        self._metrics = metrics

    def acquire(self) -> None:
        if self._free <= 0:
            raise RateLimitError("too many requests in flight to the engine", retry_after_s=1)
        self._free -= 1
        self._metrics.in_flight.inc()

    def release(self) -> None:
        self._free += 1
        self._metrics.in_flight.dec()


class ChatService:
    def __init__(
        self,
        settings: Settings,
        engine: EngineClient,
        engine_model: str,
        salter: CacheSalter,
        guard: SchemaGuard,
        metrics: GatewayMetrics,
    ) -> None:
        self._settings = settings
        self._engine = engine
        self.engine_model = engine_model
        self._salter = salter
        self._guard = guard
        self._metrics = metrics
        self._slots = UpstreamSlots(settings.gateway.max_concurrent_upstream, metrics)

    async def prepare(
        self, request: ChatCompletionRequest, principal: Principal, session: str | None
    ) -> dict[str, Any]:
        """Check the request against every gateway rule; the body to send to the engine."""
        if request.model != self.engine_model:
            raise ModelNotFoundError(f"the model {request.model!r} does not exist", param="model")
        self.check_limits(request)
        fmt = request.response_format
        if fmt is not None and fmt.type == "json_schema":
            if fmt.json_schema is None:
                raise InvalidRequestError(
                    "response_format.json_schema is required when type is json_schema",
                    param="response_format.json_schema",
                )
            await self._guard.check(fmt.json_schema.schema_, tenant=principal.tenant)
        salt = self._salter.salt(principal.tenant, session)
        return request.engine_body(model=self.engine_model, cache_salt=salt)

    def check_limits(self, request: ChatCompletionRequest) -> None:
        """The rules every chat request obeys, whichever model answers it."""
        limits = self._settings.gateway
        extras = request.extras()
        if "cache_salt" in extras and self._settings.isolation.client_salt == "reject":
            raise InvalidRequestError(
                "cache_salt is set by the server from its isolation scope and cannot be supplied",
                param="cache_salt",
            )
        if extras:
            logger.info("ignoring unknown request fields: %s", ", ".join(for_log(name) for name in extras[:20]))
        if len(request.messages) > limits.max_messages:
            raise InvalidRequestError(f"at most {limits.max_messages} messages per request", param="messages")
        if request.prompt_chars() > limits.max_prompt_chars:
            raise InvalidRequestError(
                f"the messages hold {request.prompt_chars()} characters; the limit is {limits.max_prompt_chars}",
                param="messages",
                code="context_length_exceeded",
            )
        tokens = request.requested_tokens()
        if tokens is not None and tokens > limits.max_tokens_limit:
            raise InvalidRequestError(
                f"max_tokens {tokens} is above this server's limit of {limits.max_tokens_limit}",
                param="max_tokens",
            )

    async def complete(self, body: dict[str, Any]) -> bytes:
        self._slots.acquire()
        try:
            return await self._engine.post_json("/v1/chat/completions", body)
        finally:
            self._slots.release()

    async def first_chunk(self, body: dict[str, Any]) -> tuple[bytes, AsyncIterator[bytes]]:
        """Start the stream and wait for its first bytes, so that errors before it get a plain response."""
        self._slots.acquire()
        iterator = self._engine.stream("/v1/chat/completions", body).__aiter__()
        try:
            first = await iterator.__anext__()
        except StopAsyncIteration:
            self._slots.release()
            return b"", _empty()
        except BaseException:
            self._slots.release()
            raise
        return first, self._relay_rest(iterator)

    async def _relay_rest(self, iterator: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        try:
            async for chunk in iterator:
                yield chunk
        except PlanstackError as exc:
            _, payload, _ = error_body(exc)
            yield f"data: {json.dumps(payload)}\n\ndata: [DONE]\n\n".encode()
        finally:
            self._slots.release()


async def _empty() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator

"""Chat completions relayed to the engine: limits, schema guard, server-side cache salt, streaming.

The router validates and delegates here; this service applies the gateway's rules in one place:
known model, prompt and token limits, no client `cache_salt`, response_format schemas checked by the
`SchemaGuard` before the engine sees them, back-pressure (429) when too many requests are in flight,
then the relay (whole body, or an SSE stream whose mid-stream errors become a final error event).
With `tools` (and tool_choice not "none") the gateway decodes the calls itself (serving/toolcalls);
the engine never sees `tools`. Legacy completions go through the same rules (`check_completion`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from serving.auth import Principal
from serving.door import Door
from serving.errors import (
    InvalidRequestError,
    ModelNotFoundError,
    PlanstackError,
    UpstreamError,
    error_body,
)
from serving.isolation import CacheSalter
from serving.metrics import GatewayMetrics
from serving.protocol import ChatCompletionRequest, CompletionRequest
from serving.redaction import for_log
from serving.schema_guard import SchemaGuard
from serving.settings import Settings
from serving.toolcalls import DecodedTurn, ToolCallService
from serving.upstream import EngineClient

logger = logging.getLogger("planstack.chat")
CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"


@dataclass
class ToolCallTurn:
    """The gateway decoded tool calls (validated); the route shapes them as OpenAI chat or Responses."""

    turn: DecodedTurn


@dataclass
class RelayTurn:
    """A text answer: this body goes to the engine as it is (relayed whole or streamed)."""

    body: dict[str, Any]


ChatTurn = ToolCallTurn | RelayTurn
_TOOL_FIELDS = ("tools", "tool_choice", "parallel_tool_calls")


class ChatService:
    def __init__(
        self,
        settings: Settings,
        engine: EngineClient,
        engine_model: str,
        salter: CacheSalter,
        guard: SchemaGuard,
        metrics: GatewayMetrics,
        tools: ToolCallService | None = None,
        *,
        door: Door | None = None,
    ) -> None:
        self._settings = settings
        self._engine = engine
        self.engine_model = engine_model
        self._salter = salter
        self._guard = guard
        self._metrics = metrics
        self.tools = tools or ToolCallService(settings.toolcalls, guard, door=door)

    def check_model(self, model: str) -> None:
        if model != self.engine_model:
            raise ModelNotFoundError(f"the model {model!r} does not exist", param="model")

    async def turn(self, request: ChatCompletionRequest, principal: Principal, session: str | None) -> ChatTurn:
        """Check the request against every gateway rule; then either the body to relay to the engine, or
        (tools offered and tool_choice not "none") the tool calls the gateway decoded itself."""
        self.check_model(request.model)
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
        body = request.engine_body(model=self.engine_model, cache_salt=salt)
        for key in _TOOL_FIELDS:  # never an engine-side tool parser: the gateway decodes tool calls
            body.pop(key, None)
        if not request.uses_tools():
            if request.tools or request.has_tool_history():
                body["messages"] = self.tools.conversation(request.messages, None)
            return RelayTurn(body)
        if (request.n or 1) > 1:
            raise InvalidRequestError("n > 1 is not supported with tool calls", param="n")
        prepared = await self.tools.prepare(
            request.tools, request.tool_choice, request.parallel_tool_calls, tenant=principal.tenant
        )
        conversation = self.tools.conversation(request.messages, prepared.policy.catalog)
        sampling: dict[str, Any] = {k: body[k] for k in ("model", "cache_salt", "top_p", "seed") if k in body}
        sampling["temperature"] = request.temperature or 0.0
        async def engine_json(step: dict[str, Any]) -> dict[str, Any]:
            return await self.engine_json(step, tenant=principal.tenant)

        async with self._engine.slots.admitted(principal.tenant):  # one slot for the turn's engine calls
            decoded = await self.tools.decode(conversation, prepared, sampling, engine_json)
        if decoded.calls:
            return ToolCallTurn(decoded)
        body["messages"] = decoded.conversation  # "auto" and the model chose to answer in text
        return RelayTurn(body)

    def check_limits(self, request: ChatCompletionRequest) -> None:
        """The rules every chat request obeys, whichever model answers it."""
        limits = self._settings.gateway
        self._check_extras(request.extras())
        if len(request.messages) > limits.max_messages:
            raise InvalidRequestError(f"at most {limits.max_messages} messages per request", param="messages")
        limit = limits.max_prompt_chars
        if request.prompt_chars(limit=limit) > limit:  # counted no further than just past the limit
            raise InvalidRequestError(
                f"the messages and tools hold more than {limit} characters; the limit is {limit}",
                param="tools" if request.tools_chars(limit // 2) > limit // 2 else "messages",
                code="context_length_exceeded",
            )
        self._check_tokens(request.requested_tokens())

    def _check_extras(self, extras: list[str]) -> None:
        if "cache_salt" in extras and self._settings.isolation.client_salt == "reject":
            raise InvalidRequestError(
                "cache_salt is set by the server from its isolation scope and cannot be supplied",
                param="cache_salt",
            )
        if extras:
            logger.info("ignoring unknown request fields: %s", ", ".join(for_log(name) for name in extras[:20]))

    def _check_tokens(self, tokens: int | None) -> None:
        limit = self._settings.gateway.max_tokens_limit
        if tokens is not None and tokens > limit:
            raise InvalidRequestError(
                f"max_tokens {tokens} is above this server's limit of {limit}", param="max_tokens"
            )

    def check_completion(self, request: CompletionRequest, principal: Principal, session: str | None) -> dict[str, Any]:
        """The same rules for legacy completions (limits, no client salt, unknown fields dropped)."""
        self.check_model(request.model)
        limits = self._settings.gateway
        self._check_extras(request.extras())
        if request.prompt_size() > limits.max_prompt_chars:
            raise InvalidRequestError(
                f"the prompt holds {request.prompt_size()} characters; the limit is {limits.max_prompt_chars}",
                param="prompt",
                code="context_length_exceeded",
            )
        self._check_tokens(request.max_tokens)
        return request.engine_body(model=self.engine_model, cache_salt=self._salter.salt(principal.tenant, session))

    async def complete(self, body: dict[str, Any], path: str = CHAT_PATH, *, tenant: str) -> bytes:
        """The whole reply; the engine client holds one of `tenant`'s slots meanwhile (429 when none)."""
        return await self._engine.post_json(path, body, tenant=tenant)

    async def engine_json(self, body: dict[str, Any], *, tenant: str) -> dict[str, Any]:
        """One chat completion as parsed JSON (the gateway's own steps: tool calls, Responses)."""
        reply = json.loads(await self.complete(body, tenant=tenant))
        if not isinstance(reply, dict):
            raise UpstreamError(502, "the engine returned a malformed completion")
        return reply

    async def first_chunk(
        self, body: dict[str, Any], path: str = CHAT_PATH, *, tenant: str
    ) -> tuple[bytes, AsyncIterator[bytes]]:
        """Start the stream and wait for its first bytes, so that errors before it get a plain response."""
        iterator = self._engine.stream(path, body, tenant=tenant)
        try:
            first = await iterator.__anext__()
        except StopAsyncIteration:
            return b"", _empty()
        return first, self._relay_rest(iterator)

    async def _relay_rest(self, iterator: AsyncGenerator[bytes, None]) -> AsyncIterator[bytes]:
        try:
            async for chunk in iterator:
                yield chunk
        except PlanstackError as exc:
            _, payload, _ = error_body(exc)
            yield f"data: {json.dumps(payload)}\n\ndata: [DONE]\n\n".encode()
        finally:
            await iterator.aclose()  # frees the engine slot even when the client went away


async def _empty() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator

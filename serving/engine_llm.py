"""The planner's `PlannerLLM` on the gateway's one `EngineClient`.

Planner and re-planner calls go through the same client as the chat relay, so they take the same
bounded per-tenant slots, show in the same `planstack_upstream_*` metrics and fail with the same
vocabulary, translated here into the planner's (`LLMBusy`, `LLMUnavailable`, `LLMTimeout`,
`LLMRejected`); each of those declares the 429 / 503 / 504 / 502 the error funnel answers with.

The `PlannerLLM` protocol does not carry the tenant: whoever calls the planner admits the request
first (`UpstreamSlots.admitted(tenant)`), and the calls made inside run on that admission's slot and
count against its tenant.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from planner.llm import (
    Completion,
    LLMBusy,
    LLMError,
    LLMRejected,
    LLMTimeout,
    LLMUnavailable,
    Message,
    StreamedCompletion,
    chat_body,
    sse_chunks,
    whole_completion,
)
from serving.backpressure import admission
from serving.errors import (
    EngineTimeoutError,
    EngineUnavailableError,
    PlanstackError,
    RateLimitError,
    UpstreamError,
)
from serving.upstream import EngineClient

CHAT_PATH = "/v1/chat/completions"
UNAVAILABLE_STATUSES = frozenset({408, 429, 502, 503, 504})  # the engine may answer later


def _upstream_as_llm_error(exc: PlanstackError) -> LLMError:
    status = exc.status if isinstance(exc, UpstreamError) else None
    if status in UNAVAILABLE_STATUSES:
        return LLMUnavailable(exc.message, engine_status=status)
    return LLMRejected(exc.message, engine_status=status)


# The gateway's engine errors in the planner's vocabulary (the most specific class first).
_AS_LLM_ERROR: tuple[tuple[type[PlanstackError], type[LLMError]], ...] = (
    (RateLimitError, LLMBusy),
    (EngineTimeoutError, LLMTimeout),
    (EngineUnavailableError, LLMUnavailable),
)


def as_llm_error(exc: PlanstackError) -> LLMError:
    for gateway_error, llm_error in _AS_LLM_ERROR:
        if isinstance(exc, gateway_error):
            return llm_error(exc.message, engine_status=exc.status, hint=exc.hint)
    return _upstream_as_llm_error(exc)


async def text_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The lines of a byte stream whose chunks may split lines anywhere."""
    buffer = b""
    async for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            yield line.decode("utf-8", errors="replace")
    if buffer:
        yield buffer.decode("utf-8", errors="replace")


class EnginePlannerLLM:
    """`PlannerLLM` over the engine client; streamed by default, to time the first token."""

    def __init__(self, engine: EngineClient, model: str, *, stream: bool = True) -> None:
        self.engine = engine
        self.model = model
        self.stream = stream

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        cache_salt: str | None,
    ) -> Completion:
        admitted = admission()
        tenant = admitted.tenant if admitted is not None and admitted.slots is self.engine.slots else None
        body = chat_body(
            self.model,
            messages,
            json_schema=json_schema,
            max_tokens=max_tokens,
            cache_salt=cache_salt,
            stream=self.stream,
        )
        started = time.perf_counter()
        try:
            if not self.stream:
                raw = await self.engine.post_json(CHAT_PATH, body, tenant=tenant)
                return whole_completion(json.loads(raw), time.perf_counter() - started)
            streamed = StreamedCompletion(started)
            chunks = self.engine.stream(CHAT_PATH, body, tenant=tenant)
            async with contextlib.aclosing(chunks):  # frees the slot at [DONE], not when collected
                async for event in sse_chunks(text_lines(chunks)):
                    streamed.add(event)
                    if streamed.looping:  # closing the stream aborts the request in the engine
                        break
            return streamed.completion()
        except PlanstackError as exc:
            raise as_llm_error(exc) from exc
        except ValueError as exc:  # a body or a stream chunk that is not JSON
            raise LLMRejected(f"malformed completion: {exc}") from exc

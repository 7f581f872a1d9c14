"""The planner's view of the engine: one chat completion, optionally under a JSON-schema grammar.

`PlannerLLM` is all the planner knows of the engine. Its implementation lives with the gateway's one
engine client (`serving/engine_llm.py`), so planner calls share the gateway's bounded slots, metrics
and error vocabulary; this module keeps what is pure: the request body, the assembly of a streamed
or whole OpenAI chat completion into a `Completion`, and the typed errors the planner reacts to.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from contract.errors import PlanstackBaseError
from planner.runaway import RepeatWatch

Message = dict[str, str]


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    ttft_s: float | None = None  # time to first token (streaming only); includes grammar compile
    finish_reason: str | None = None

    @property
    def decode_s_per_token(self) -> float | None:
        """Seconds per output token after the first (prefill and grammar compile excluded)."""
        if self.ttft_s is None or self.completion_tokens < 2:
            return None
        return (self.latency_s - self.ttft_s) / (self.completion_tokens - 1)


class LLMError(PlanstackBaseError):
    """A failed engine call; `retryable` says whether the same call may succeed later, `engine_status`
    is the engine's own HTTP status when it answered. A client is told only what kind of failure it
    was (`public_message`), never the engine's words; the gateway answers 502 unless a subclass says
    otherwise."""

    status = 502
    type = "upstream_error"
    public_message: str | None = "the engine rejected the planner's request"

    def __init__(self, message: str, *, engine_status: int | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.engine_status = engine_status


class LLMUnavailable(LLMError):
    """The engine cannot be reached (down, restarting, overloaded)."""

    status = 503
    type = "service_unavailable"
    code = "engine_unavailable"
    retryable = True
    retry_after_s = 5
    public_message: str | None = "the engine is not reachable"


class LLMBusy(LLMUnavailable):
    """No engine slot is free for this caller (the gateway's back-pressure): try again shortly."""

    status = 429
    type = "rate_limit_error"
    code = "too_many_requests"
    retry_after_s = 1
    public_message = None  # the gateway's own words: which limit was reached


class LLMTimeout(LLMError):
    status = 504
    type = "timeout"
    code = "engine_timeout"
    retryable = True
    public_message = "the engine did not answer in time"


class LLMRejected(LLMError):
    """The engine refused the request (4xx, or a 5xx such as a grammar compile timeout)."""


class PlannerLLM(Protocol):
    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        cache_salt: str | None,
    ) -> Completion: ...


def chat_body(
    model: str,
    messages: list[Message],
    *,
    json_schema: dict[str, Any] | None,
    max_tokens: int,
    cache_salt: str | None,
    stream: bool,
) -> dict[str, Any]:
    """The OpenAI chat body of one planner call (greedy; vLLM's `structured_outputs` for the grammar)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    if json_schema is not None:
        body["structured_outputs"] = {"json": json_schema}
    if cache_salt:
        body["cache_salt"] = cache_salt
    return body


class StreamedCompletion:
    """Assembles the chunks of a streamed chat completion, timing the first token."""

    def __init__(self, started: float) -> None:
        self._started = started
        self._parts: list[str] = []
        self._ttft: float | None = None
        self._usage: dict[str, Any] = {}
        self._finish: str | None = None
        self._watch = RepeatWatch()

    @property
    def looping(self) -> bool:
        """The answer is inside a string that repeats itself (planner/runaway.py): the caller stops the
        stream, and the completion reads as cut off at its length."""
        return self._watch.looping

    def add(self, chunk: dict[str, Any]) -> None:
        if "error" in chunk:  # an error event in the middle of the stream
            raise LLMRejected(str(chunk["error"])[:300])
        self._usage = chunk.get("usage") or self._usage
        for choice in chunk.get("choices") or []:
            delta = (choice.get("delta") or {}).get("content")
            if delta:
                if self._ttft is None:
                    self._ttft = time.perf_counter() - self._started
                self._parts.append(delta)
                self._watch.feed(delta)
            self._finish = choice.get("finish_reason") or self._finish

    def completion(self) -> Completion:
        stopped = self.looping and not self._usage  # stopped by the caller: no usage chunk came
        return Completion(
            text="".join(self._parts),
            prompt_tokens=int(self._usage.get("prompt_tokens", 0)),
            completion_tokens=len(self._parts) if stopped else int(self._usage.get("completion_tokens", 0)),
            latency_s=time.perf_counter() - self._started,
            ttft_s=self._ttft,
            finish_reason="length" if self.looping else self._finish,
        )


def whole_completion(payload: Any, latency_s: float) -> Completion:
    """A non-streamed chat completion body as a `Completion` (LLMRejected when malformed)."""
    try:
        choice = payload["choices"][0]
        usage = payload.get("usage") or {}
        return Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=latency_s,
            finish_reason=choice.get("finish_reason"),
        )
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise LLMRejected(f"malformed completion: {str(payload)[:200]}") from exc


async def sse_chunks(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON chunks of an OpenAI-style server-sent-event stream, given its lines, up to `data: [DONE]`
    (ValueError on a chunk that is not JSON)."""
    async for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        yield json.loads(data)

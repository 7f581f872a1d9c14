"""The planner's view of the engine: one chat completion, optionally under a JSON-schema grammar."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

Message = dict[str, str]
# Extra headers for one engine request from its body (e.g. serving.routing.EngineRouting.headers).
RequestHeaders = Callable[[Mapping[str, Any]], dict[str, str]]


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


class LLMError(Exception):
    """A failed engine call; `retryable` says whether the same call may succeed later."""

    retryable = False

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMUnavailable(LLMError):
    retryable = True


class LLMTimeout(LLMError):
    retryable = True


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


class VLLMChatClient:
    """`POST {base_url}/v1/chat/completions` on a vLLM OpenAI server, streamed to time the first token."""

    def __init__(
        self,
        base_url: str,
        model: str,
        http: httpx.AsyncClient,
        *,
        timeout_s: float = 120.0,
        stream: bool = True,
        headers: RequestHeaders | None = None,
        api_key: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers: RequestHeaders = headers or (lambda _body: {})
        self.model = model
        self.http = http
        self.timeout_s = timeout_s
        self.stream = stream
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}  # the engine's key

    def _headers_for(self, body: dict[str, Any]) -> dict[str, str]:
        return {**self._auth, **self.headers(body)}

    def body(
        self, messages: list[Message], *, json_schema: dict[str, Any] | None, max_tokens: int, cache_salt: str | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": 0,
            "stream": self.stream,
        }
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        if json_schema is not None:
            body["structured_outputs"] = {"json": json_schema}
        if cache_salt:
            body["cache_salt"] = cache_salt
        return body

    async def complete(
        self,
        messages: list[Message],
        *,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
        cache_salt: str | None,
    ) -> Completion:
        body = self.body(messages, json_schema=json_schema, max_tokens=max_tokens, cache_salt=cache_salt)
        url = f"{self.base_url}/v1/chat/completions"
        start = time.perf_counter()
        try:
            if self.stream:
                return await self._streamed(url, body, start)
            response = await self.http.post(url, json=body, headers=self._headers_for(body), timeout=self.timeout_s)
            _raise_for_status(response.status_code, response.text)
            return _parse_full(response.json(), time.perf_counter() - start)
        except httpx.TimeoutException as exc:
            raise LLMTimeout(f"engine timed out after {self.timeout_s} s") from exc
        except httpx.TransportError as exc:
            raise LLMUnavailable(f"engine unreachable at {self.base_url}: {exc}") from exc

    async def _streamed(self, url: str, body: dict[str, Any], start: float) -> Completion:
        parts: list[str] = []
        ttft: float | None = None
        usage: dict[str, Any] = {}
        finish: str | None = None
        headers = self._headers_for(body)
        async with self.http.stream("POST", url, json=body, headers=headers, timeout=self.timeout_s) as response:
            if response.status_code >= 400:
                await response.aread()
                _raise_for_status(response.status_code, response.text)
            async for chunk in sse_chunks(response):
                if "error" in chunk:
                    raise LLMRejected(str(chunk["error"]))
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices", []):
                    delta = (choice.get("delta") or {}).get("content")
                    if delta:
                        if ttft is None:
                            ttft = time.perf_counter() - start
                        parts.append(delta)
                    finish = choice.get("finish_reason") or finish
        return Completion(
            text="".join(parts),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=time.perf_counter() - start,
            ttft_s=ttft,
            finish_reason=finish,
        )


async def sse_chunks(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON chunks of an OpenAI-style server-sent-event stream, up to `data: [DONE]`."""
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        yield json.loads(data)


def _parse_full(payload: dict[str, Any], latency: float) -> Completion:
    try:
        choice = payload["choices"][0]
        usage = payload.get("usage") or {}
        return Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=latency,
            finish_reason=choice.get("finish_reason"),
        )
    except (KeyError, IndexError, TypeError) as exc:
        raise LLMRejected(f"malformed completion: {str(payload)[:200]}") from exc


def _raise_for_status(status: int, text: str) -> None:
    if status < 400:
        return
    message = f"engine answered {status}: {text[:300]}"
    if status in (408, 429, 502, 503, 504):
        raise LLMUnavailable(message, status=status)
    raise LLMRejected(message, status=status)

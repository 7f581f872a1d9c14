"""VLLMChatClient against a fake OpenAI-compatible upstream (httpx mock transport; no vLLM)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from planner.llm import LLMRejected, LLMUnavailable, VLLMChatClient

pytestmark = pytest.mark.fake_upstream


def sse(*chunks: dict[str, object]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def complete(handler: httpx.MockTransport, **kw: object) -> object:
    async def go() -> object:
        async with httpx.AsyncClient(transport=handler) as http:
            client = VLLMChatClient("http://engine", "m", http, **kw)  # type: ignore[arg-type]
            return await client.complete(
                [{"role": "user", "content": "hi"}], json_schema={"type": "object"}, max_tokens=20, cache_salt="s1"
            )

    return asyncio.run(go())


def test_streamed_completion_body_and_usage() -> None:
    seen: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        body = sse(
            {"choices": [{"delta": {"content": '{"a"'}}]},
            {"choices": [{"delta": {"content": ": 1}"}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5}},
        )
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    result = complete(httpx.MockTransport(handler))
    assert result.text == '{"a": 1}' and result.prompt_tokens == 7 and result.completion_tokens == 5  # type: ignore[attr-defined]
    assert result.ttft_s is not None and result.finish_reason == "stop"  # type: ignore[attr-defined]
    body = seen[0]
    assert body["structured_outputs"] == {"json": {"type": "object"}} and "guided_json" not in body
    assert body["cache_salt"] == "s1" and body["temperature"] == 0 and body["max_tokens"] == 20


def test_non_streamed_completion() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "choices": [{"message": {"content": "{}"}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1},
            },
        )

    result = complete(httpx.MockTransport(handler), stream=False)
    assert result.text == "{}" and result.finish_reason == "length"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("status", "error", "retryable"),
    [(500, LLMRejected, False), (400, LLMRejected, False), (503, LLMUnavailable, True)],
)
def test_errors_are_typed(status: int, error: type[Exception], retryable: bool) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(status, text="boom"))
    with pytest.raises(error) as info:
        complete(transport)
    assert info.value.retryable is retryable  # type: ignore[attr-defined]


def test_connection_error_is_retryable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    with pytest.raises(LLMUnavailable) as info:
        complete(httpx.MockTransport(handler))
    assert info.value.retryable

"""The planner's engine model (`EnginePlannerLLM`) over the gateway's aiohttp `EngineClient`, against
a scripted OpenAI-compatible upstream on a loopback port (no vLLM): the request body, streamed and
whole completions, and the planner's typed errors for every engine failure."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from planner.llm import Completion, LLMBusy, LLMError, LLMRejected, LLMTimeout, LLMUnavailable
from serving.backpressure import UpstreamSlots
from serving.engine_llm import EnginePlannerLLM
from serving.errors import RateLimitError
from serving.metrics import GatewayMetrics
from serving.upstream import EngineClient
from tests.fakes.upstream import ServerThread, free_port

pytestmark = pytest.mark.fake_upstream


def sse(*chunks: dict[str, object]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


@dataclass
class Script:
    status: int = 200
    body: bytes = b""
    media_type: str = "text/event-stream"
    delay_s: float = 0.0
    seen: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def script() -> Iterator[tuple[Script, str]]:
    scripted = Script()
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        scripted.seen.append(await request.json())
        await asyncio.sleep(scripted.delay_s)
        if scripted.status != 200:
            return JSONResponse({"error": {"message": "boom", "type": "x", "code": scripted.status}}, scripted.status)
        return Response(scripted.body, media_type=scripted.media_type)

    server = ServerThread(app).start()
    try:
        yield scripted, server.url
    finally:
        server.stop()


def complete(url: str, *, stream: bool = True, timeout_s: float = 10, slots: UpstreamSlots | None = None) -> Completion:
    async def go() -> Completion:
        engine = EngineClient(url, timeout_s=timeout_s, connect_timeout_s=1, slots=slots or UpstreamSlots(4, 4))
        llm = EnginePlannerLLM(engine, "m", stream=stream)
        try:
            return await llm.complete(
                [{"role": "user", "content": "hi"}], json_schema={"type": "object"}, max_tokens=20, cache_salt="s1"
            )
        finally:
            await engine.close()

    return asyncio.run(go())


def test_streamed_completion_body_and_usage(script: tuple[Script, str]) -> None:
    scripted, url = script
    scripted.body = sse(
        {"choices": [{"delta": {"content": '{"a"'}}]},
        {"choices": [{"delta": {"content": ": 1}"}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5}},
    )
    result = complete(url)
    assert result.text == '{"a": 1}' and result.prompt_tokens == 7 and result.completion_tokens == 5
    assert result.ttft_s is not None and result.finish_reason == "stop"
    body = scripted.seen[0]
    assert body["structured_outputs"] == {"json": {"type": "object"}} and "guided_json" not in body
    assert body["cache_salt"] == "s1" and body["temperature"] == 0 and body["max_tokens"] == 20
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_a_stream_looping_inside_a_string_is_stopped_and_reads_as_cut_off(script: tuple[Script, str]) -> None:
    """planner/runaway.py: the answer repeats one unit inside a string; the client stops reading there
    (the chunks after it, a stop and the usage, are never taken) and reports the answer as cut off."""
    scripted, url = script
    pieces = ['{"start": "2021-03-03T00:00:00.', *["0"] * 60, '"}']
    scripted.body = sse(
        *({"choices": [{"delta": {"content": piece}}]} for piece in pieces),
        {"choices": [{"delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 63}},
    )
    result = complete(url)
    assert result.finish_reason == "length" and result.text.endswith("0" * 48) and not result.text.endswith('"}')
    assert result.completion_tokens == len(result.text) - len(pieces[0]) + 1  # the pieces read, one token each


@pytest.mark.parametrize(
    ("text", "looping"),
    [
        ('{"title": "' + "Launch " * 8, True),
        ('{"a": "' + "x" * 47, False),  # shorter than the window
        ('{"a": "' + "x" * 40 + '", "b": "' + "x" * 40, False),  # each string ends within the window
        ('{"a": "the quick brown fox jumps over the lazy dog, then runs far away', False),
        ('{"a": "' + '\\"' * 30, True),  # escapes are read as characters of the string
        ('{"a": [' + '"beta", ' * 20, False),  # repeated items are bounded by maxItems, not watched
    ],
)
def test_repeat_watch(text: str, looping: bool) -> None:
    from planner.runaway import RepeatWatch

    watch = RepeatWatch()
    for char in text:
        watch.feed(char)
    assert watch.looping is looping and RepeatWatch().feed(text) is looping


def test_non_streamed_completion(script: tuple[Script, str]) -> None:
    scripted, url = script
    scripted.media_type = "application/json"
    scripted.body = json.dumps(
        {
            "choices": [{"message": {"content": "{}"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        }
    ).encode()
    result = complete(url, stream=False)
    assert result.text == "{}" and result.finish_reason == "length" and result.prompt_tokens == 3
    assert scripted.seen[0]["stream"] is False


def test_an_error_event_in_the_stream_is_a_rejection(script: tuple[Script, str]) -> None:
    scripted, url = script
    scripted.body = sse({"choices": [{"delta": {"content": "{"}}]}, {"error": {"message": "grammar failed"}})
    with pytest.raises(LLMRejected, match="grammar failed"):
        complete(url)


@pytest.mark.parametrize(
    ("status", "error", "retryable"),
    [(500, LLMRejected, False), (400, LLMRejected, False), (503, LLMUnavailable, True), (429, LLMUnavailable, True)],
)
def test_engine_statuses_are_typed(
    script: tuple[Script, str], status: int, error: type[LLMError], retryable: bool
) -> None:
    scripted, url = script
    scripted.status = status
    with pytest.raises(error) as info:
        complete(url)
    assert type(info.value) is error and info.value.retryable is retryable and info.value.engine_status == status


def test_connection_refused_is_unavailable_and_retryable() -> None:
    with pytest.raises(LLMUnavailable) as info:
        complete(f"http://127.0.0.1:{free_port()}")
    assert info.value.retryable and not isinstance(info.value, LLMBusy)


def test_a_stalled_engine_is_a_timeout(script: tuple[Script, str]) -> None:
    scripted, url = script
    scripted.delay_s = 3
    with pytest.raises(LLMTimeout) as info:
        complete(url, timeout_s=0.3)
    assert info.value.retryable


def test_planner_calls_take_the_engine_clients_slots(script: tuple[Script, str]) -> None:
    """Outside any admission a planner call takes a slot of the engine client for itself and gives it
    back at [DONE]; with every slot taken it is refused at once (LLMBusy: the planner's 429) and never
    reaches the engine."""
    scripted, url = script
    scripted.body = sse({"choices": [{"delta": {"content": "{}"}, "finish_reason": "stop"}]})
    metrics = GatewayMetrics()
    slots = UpstreamSlots(1, 1, metrics)
    assert complete(url, slots=slots).text == "{}"
    assert slots.in_flight() == 0  # released at [DONE]

    async def full() -> None:
        await slots.acquire("someone-else")  # the only slot is taken
        try:
            with pytest.raises(LLMBusy) as info:
                await planner_call(url, slots)
            assert info.value.engine_status == 429 and info.value.retryable
        finally:
            slots.release("someone-else")

    asyncio.run(full())
    assert len(scripted.seen) == 1  # the refused call never reached the engine
    assert 'planstack_upstream_rejected_total{reason="global"} 1.0' in metrics.render().decode()


def test_the_calls_of_an_admitted_planning_request_share_its_one_slot(script: tuple[Script, str]) -> None:
    """A planning request is admitted once for its tenant; its several engine calls run on that slot
    (a tenant with a share of one still plans), and the slot is free again when planning ends."""
    scripted, url = script
    scripted.body = sse({"choices": [{"delta": {"content": "{}"}, "finish_reason": "stop"}]})
    slots = UpstreamSlots(4, 1)

    async def plan() -> list[int]:
        seen: list[int] = []
        async with slots.admitted("tenantA"):
            for _ in range(3):
                await planner_call(url, slots)
                seen.append(slots.in_flight("tenantA"))
            with pytest.raises(RateLimitError):  # another request of the tenant is over its share
                await slots.acquire("tenantA")
        return seen

    assert asyncio.run(plan()) == [1, 1, 1]
    assert slots.in_flight() == 0 and len(scripted.seen) == 3


async def planner_call(url: str, slots: UpstreamSlots) -> Completion:
    engine = EngineClient(url, timeout_s=5, connect_timeout_s=1, slots=slots)
    try:
        return await EnginePlannerLLM(engine, "m").complete([], json_schema=None, max_tokens=1, cache_salt=None)
    finally:
        await engine.close()

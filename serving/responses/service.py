"""Responses API requests served by the chat service (tool calls decoded by the gateway, text relayed)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from serving.auth import Principal
from serving.chat import ChatService, ToolCallTurn
from serving.responses.protocol import ResponsesRequest
from serving.responses.shaping import EventWriter, ResponseShape, function_call_item, message_item, new_id
from serving.toolcalls.decoder import DecodedTurn
from serving.toolcalls.shaping import fragments


class ResponsesService:
    def __init__(self, chat: ChatService) -> None:
        self._chat = chat

    async def create(self, request: ResponsesRequest, who: Principal, session: str | None) -> dict[str, Any]:
        shape = ResponseShape(request)
        turn = await self._chat.turn(request.to_chat(), who, session)
        if isinstance(turn, ToolCallTurn):
            shape.output = [function_call_item(new_id("fc"), call) for call in turn.turn.calls]
            shape.finish("tool_calls", turn.turn.usage.as_dict())
            return shape.body()
        reply = await self._chat.engine_json({**turn.body, "stream": False}, tenant=who.tenant)
        choice = (reply.get("choices") or [{}])[0]
        text = str((choice.get("message") or {}).get("content") or "")
        shape.output = [message_item(new_id("msg"), text)]
        shape.finish(choice.get("finish_reason"), reply.get("usage"))
        return shape.body()

    async def stream(self, request: ResponsesRequest, who: Principal, session: str | None) -> AsyncIterator[bytes]:
        """The event stream; every error before the first event is raised here (a plain error answer)."""
        shape = ResponseShape(request)
        turn = await self._chat.turn(request.to_chat(), who, session)
        if isinstance(turn, ToolCallTurn):
            return _tool_call_events(shape, turn.turn)
        first, rest = await self._chat.first_chunk(turn.body, tenant=who.tenant)
        return _text_events(shape, _prepend(first, rest))


def _opening(shape: ResponseShape, events: EventWriter) -> list[bytes]:
    return [
        events.event("response.created", response=shape.body()),
        events.event("response.in_progress", response=shape.body()),
    ]


async def _tool_call_events(shape: ResponseShape, turn: DecodedTurn) -> AsyncIterator[bytes]:
    events = EventWriter()
    for chunk in _opening(shape, events):
        yield chunk
    for index, call in enumerate(turn.calls):
        item_id = new_id("fc")
        yield events.event(
            "response.output_item.added", output_index=index, item=function_call_item(item_id, call, done=False)
        )
        for piece in fragments(call.arguments_json):
            yield events.event(
                "response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece
            )
        yield events.event(
            "response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=call.arguments_json
        )
        item = function_call_item(item_id, call)
        shape.output.append(item)
        yield events.event("response.output_item.done", output_index=index, item=item)
    shape.finish("tool_calls", turn.usage.as_dict())
    yield events.event("response.completed", response=shape.body())


async def _text_events(shape: ResponseShape, engine: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    events = EventWriter()
    for chunk in _opening(shape, events):
        yield chunk
    item_id = new_id("msg")
    yield events.event("response.output_item.added", output_index=0, item=message_item(item_id, "", "in_progress"))
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    yield events.event("response.content_part.added", item_id=item_id, output_index=0, content_index=0, part=part)
    texts: list[str] = []
    finish: str | None = None
    usage: dict[str, Any] | None = None
    failed = False
    async for data in _sse_data(engine):  # read to the end, so that the engine slot is released
        if "error" in data:
            error = data["error"] if isinstance(data["error"], dict) else {"message": str(data["error"])}
            message, code, param = str(error.get("message")), error.get("code"), error.get("param")
            yield events.event("error", code=code, message=message, param=param)
            failed = True
        if failed:
            continue
        usage = data.get("usage") or usage
        for choice in data.get("choices") or []:
            delta = (choice.get("delta") or {}).get("content")
            if delta:
                texts.append(delta)
                yield events.event(
                    "response.output_text.delta", item_id=item_id, output_index=0, content_index=0, delta=delta,
                    logprobs=[],
                )  # fmt: skip
            finish = choice.get("finish_reason") or finish
    if failed:
        return
    text = "".join(texts)
    yield events.event(
        "response.output_text.done", item_id=item_id, output_index=0, content_index=0, text=text, logprobs=[]
    )
    yield events.event(
        "response.content_part.done", item_id=item_id, output_index=0, content_index=0, part={**part, "text": text}
    )
    item = message_item(item_id, text, "incomplete" if finish == "length" else "completed")
    shape.output.append(item)
    yield events.event("response.output_item.done", output_index=0, item=item)
    shape.finish(finish, usage)
    yield events.event("response.incomplete" if shape.status == "incomplete" else "response.completed",
                       response=shape.body())  # fmt: skip


async def _prepend(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    yield first
    async for chunk in rest:
        yield chunk


async def _sse_data(chunks: AsyncIterator[bytes]) -> AsyncIterator[dict[str, Any]]:
    """The JSON payloads of an SSE byte stream (split anywhere); `data: [DONE]` is skipped."""
    buffer = b""
    async for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                continue
            try:
                payload = json.loads(data)
            except ValueError:
                continue
            if isinstance(payload, dict):
                yield payload

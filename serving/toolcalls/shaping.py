"""Decoded tool calls in the OpenAI chat shapes: a whole completion, or SSE tool-call deltas."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from serving.toolcalls.decoder import DecodedTurn, ToolCall

ARGUMENT_FRAGMENT_CHARS = 24


def completion_id() -> str:
    return "chatcmpl-" + secrets.token_hex(12)


def openai_tool_call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json}}


def chat_completion(turn: DecodedTurn, model: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "tool_calls": [openai_tool_call(c) for c in turn.calls]}
    return {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}],
        "usage": turn.usage.as_dict(),
    }


def fragments(text: str, size: int = ARGUMENT_FRAGMENT_CHARS) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


async def chat_chunks(turn: DecodedTurn, model: str, *, include_usage: bool) -> AsyncIterator[bytes]:
    """OpenAI streaming: role, then per call its id and name, then its arguments in fragments, then
    finish_reason "tool_calls", the usage chunk when asked, and [DONE]. The calls were validated first."""
    base = {"id": completion_id(), "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return f"data: {json.dumps({**base, 'choices': [choice]})}\n\n".encode()

    yield chunk({"role": "assistant", "content": None})
    for index, call in enumerate(turn.calls):
        head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        yield chunk({"tool_calls": [head]})
        for piece in fragments(call.arguments_json):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls")
    if include_usage:
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': turn.usage.as_dict()})}\n\n".encode()
    yield b"data: [DONE]\n\n"

"""Response objects and stream events of the Responses API, in the shapes the openai SDK parses."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from serving.responses.protocol import ResponsesRequest
from serving.toolcalls.decoder import ToolCall


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def usage_of(chat_usage: dict[str, Any] | None) -> dict[str, Any]:
    usage = chat_usage or {}
    details = usage.get("prompt_tokens_details") or {}
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": int(details.get("cached_tokens") or 0), "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    content = [part] if status != "in_progress" else []
    return {"id": item_id, "type": "message", "role": "assistant", "status": status, "content": content}


def function_call_item(item_id: str, call: ToolCall, *, done: bool = True) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments_json if done else "",
        "status": "completed" if done else "in_progress",
    }


@dataclass
class ResponseShape:
    """One response being built: its id, the request it answers, and the output so far."""

    request: ResponsesRequest
    id: str = field(default_factory=lambda: new_id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))
    output: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    status: str = "in_progress"
    incomplete: str | None = None

    def body(self) -> dict[str, Any]:
        request = self.request
        choice = request.tool_choice
        if isinstance(choice, dict):
            name = choice.get("name") or (choice.get("function") or {}).get("name")  # type: ignore[union-attr]
            choice = {"type": "function", "name": name}
        fmt = request.text.format if request.text is not None else None
        text_format: dict[str, Any] = {"type": "text"}
        if fmt is not None:
            text_format = fmt.model_dump(by_alias=True, exclude_none=True, exclude=set(fmt.model_extra or {}))
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": self.status,
            "completed_at": int(time.time()) if self.status == "completed" else None,
            "error": None,
            "incomplete_details": {"reason": self.incomplete} if self.incomplete else None,
            "instructions": request.instructions,
            "max_output_tokens": request.max_output_tokens,
            "model": request.model,
            "output": self.output,
            "parallel_tool_calls": request.parallel_tool_calls is not False,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "tool_choice": choice or ("auto" if request.tools else "none"),
            "tools": [_function_tool(tool) for tool in request.tools or []],
            "text": {"format": text_format},
            "metadata": request.metadata or {},
            "store": False,
            "usage": self.usage,
        }

    def finish(self, finish_reason: str | None, chat_usage: dict[str, Any] | None) -> None:
        self.usage = usage_of(chat_usage)
        if finish_reason == "length":
            self.status, self.incomplete = "incomplete", "max_output_tokens"
        else:
            self.status = "completed"


def _function_tool(tool: dict[str, Any]) -> dict[str, Any]:
    keys = ("type", "name", "description", "parameters", "strict")
    return {key: tool[key] for key in keys if key in tool}


class EventWriter:
    """Numbered server-sent events (`event: TYPE` + `data: JSON`), as the Responses API streams them."""

    def __init__(self) -> None:
        self.sequence = 0

    def event(self, kind: str, **payload: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.sequence, **payload}
        self.sequence += 1
        return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

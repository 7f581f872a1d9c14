"""The `planner` chat model's answers: a plan as a chat completion, whole or as one streamed chunk."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from planner.service import PlanResult
from serving.plans.protocol import PLANNER_MODEL


def plan_completion(result: PlanResult) -> dict[str, Any]:
    """A planning result as a chat completion: the plan JSON as the message content (`{"nodes": []}` when
    no tool fits), planstack's own fields under `planstack`."""
    plan = result.plan.model_dump(exclude_none=True) if result.plan is not None else {"nodes": []}
    content = json.dumps(plan, separators=(",", ":"))
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": PLANNER_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": result.usage,
        "planstack": {
            "plan_id": result.plan_id,
            "path": result.path,
            "fallback_reason": result.fallback_reason,
            "reason": result.reason,
            "missing": result.missing,  # path "needs_input": what the user must give (planner/results.py)
        },
    }


async def as_sse(reply: dict[str, Any]) -> AsyncIterator[bytes]:
    """A whole chat completion as one streamed chunk (the plan exists only once it is validated)."""
    message = reply["choices"][0]["message"]
    chunk = {
        "id": reply["id"],
        "object": "chat.completion.chunk",
        "created": reply["created"],
        "model": reply["model"],
        "choices": [{"index": 0, "delta": message, "finish_reason": "stop"}],
    }
    yield f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()


def message_text(content: Any) -> str:
    """A chat message's content as plain text (string content, or its text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.text for part in content)
    return ""

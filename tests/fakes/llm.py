"""The fake planner model shared by the planner tests: scripted replies, every call recorded.

`enqueue(*replies)` adds replies (a string is the completion text; a `Completion` is returned as it is,
e.g. one cut off with `finish_reason="length"`; an exception is raised instead);
`history` holds every call with its messages, grammar, max_tokens and cache salt. An empty queue
answers "{" (invalid JSON), so a test sees exactly how many calls the code under test made.
"""

from __future__ import annotations

from typing import Any

from planner.llm import Completion, Message


class FakePlannerLLM:
    def __init__(self, *replies: str | Completion | Exception) -> None:
        self.queue: list[str | Completion | Exception] = list(replies)
        self.history: list[dict[str, Any]] = []

    def enqueue(self, *replies: str | Completion | Exception) -> FakePlannerLLM:
        self.queue.extend(replies)
        return self

    async def complete(
        self, messages: list[Message], *, json_schema: dict[str, Any] | None, max_tokens: int, cache_salt: str | None
    ) -> Completion:
        self.history.append({"messages": messages, "schema": json_schema, "max_tokens": max_tokens, "salt": cache_salt})
        reply = self.queue.pop(0) if self.queue else "{"
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, Completion):
            return reply
        return Completion(reply, 100, 10, 0.5, 0.1, "stop")

    @property
    def prompts(self) -> list[str]:
        return ["\n".join(str(m["content"]) for m in call["messages"]) for call in self.history]

"""Decoding a tool-calling turn with the engine, step by step (see schemas.py for the grammars).

Every step extends the same conversation (selection, then one arguments turn per call), so each
prompt is the previous one plus two turns and the engine's prefix cache (salted server-side) serves
the shared part. Arguments are validated against the client's own schema before they are returned;
an invalid one is re-asked with the problems (`toolcalls.retries`), then the turn fails with a 422.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from serving.errors import PlanstackError
from serving.toolcalls.choice import CallPolicy
from serving.toolcalls.prompts import Message, ToolPrompts
from serving.toolcalls.schemas import ArgumentGrammar, JsonSchema, allows_null
from serving.toolcalls.validation import ArgumentCheck

EngineCall = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class ToolCallFailedError(PlanstackError):
    """The model produced no valid call within the retries (the arguments are never returned invalid)."""

    status = 422
    type = "invalid_request_error"
    code = "tool_call_invalid"


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    steps: int = 0

    def add(self, usage: Mapping[str, Any] | None) -> None:
        self.steps += 1
        if usage:
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)

    def as_dict(self) -> dict[str, int]:
        total = self.prompt_tokens + self.completion_tokens
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "total_tokens": total}


@dataclass
class DecodedTurn:
    """The calls of one assistant turn; no calls: the model chose to answer in text ("auto")."""

    calls: list[ToolCall]
    usage: Usage
    conversation: list[Message] = field(default_factory=list)  # what the model read, for a text answer


@dataclass(frozen=True)
class PreparedTools:
    """The checked tools of one request: decoding schemas (all guard-checked) and validators."""

    policy: CallPolicy
    schemas: dict[str, JsonSchema]
    validators: dict[str, ArgumentCheck]
    selection: JsonSchema | None


def new_call_id() -> str:
    return "call_" + secrets.token_hex(12)


def drop_unset(value: Any, schema: Any) -> Any:
    """Remove the nulls the grammar wrote for optional properties the client schema does not let be null."""
    if not isinstance(schema, Mapping):
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        required = set(schema.get("required") or ())
        props = schema["properties"]
        kept = {}
        for key, item in value.items():
            sub = props.get(key, {})
            if item is None and key not in required and not (isinstance(sub, Mapping) and allows_null(sub)):
                continue
            kept[key] = drop_unset(item, sub)
        return kept
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [drop_unset(item, schema["items"]) for item in value]
    return value


class ToolCallDecoder:
    def __init__(self, grammar: ArgumentGrammar, prompts: ToolPrompts, engine: EngineCall, retries: int) -> None:
        self._grammar = grammar
        self._prompts = prompts
        self._engine = engine
        self._retries = retries

    async def decode(self, conversation: list[Message], tools: PreparedTools, sampling: dict[str, Any]) -> DecodedTurn:
        usage = Usage()
        policy = tools.policy
        if tools.selection is None:
            names = [policy.offered[0]] * max(1, policy.min_calls)
            selected = json.dumps({"tools": names})
        else:
            select = self._prompts.select_turn(min_calls=policy.min_calls, max_calls=policy.max_calls)
            asked = [*conversation, {"role": "user", "content": select}]
            selected, _ = await self._step(asked, tools.selection, sampling, usage)
            names = _selected_names(selected, policy)
        if not names:
            return DecodedTurn([], usage, conversation)
        select = self._prompts.select_turn(min_calls=policy.min_calls, max_calls=policy.max_calls)
        history = [*conversation, {"role": "user", "content": select}, {"role": "assistant", "content": selected}]
        calls: list[ToolCall] = []
        for index, name in enumerate(names, start=1):
            history.append({"role": "user", "content": self._prompts.arguments_turn(index, name)})
            arguments, text = await self._arguments(history, name, tools, sampling, usage)
            history.append({"role": "assistant", "content": text})
            if not any(call.name == name and call.arguments == arguments for call in calls):  # repeats merged
                calls.append(ToolCall(new_call_id(), name, arguments))
        return DecodedTurn(calls, usage, conversation)

    async def _arguments(
        self, history: list[Message], name: str, tools: PreparedTools, sampling: dict[str, Any], usage: Usage
    ) -> tuple[dict[str, Any], str]:
        schema = tools.schemas[name]
        parameters = tools.policy.catalog.get(name).parameters
        asked = list(history)
        problems: list[str] = []
        for _ in range(self._retries + 1):
            text, finish = await self._step(asked, schema, sampling, usage)
            value, problems = self._check(text, finish, parameters, tools.validators[name])
            if not problems and isinstance(value, dict):
                return value, text
            asked = [*asked, {"role": "assistant", "content": text}]
            asked.append({"role": "user", "content": self._prompts.repair_turn(name, problems)})
        raise ToolCallFailedError(
            f"the model wrote no valid arguments for {name!r} in {self._retries + 1} attempts: {'; '.join(problems)}"
        )

    @staticmethod
    def _check(text: str, finish: str | None, parameters: Any, validator: ArgumentCheck) -> tuple[Any, list[str]]:
        if finish == "length":
            return None, ["the arguments were cut off"]
        try:
            value = json.loads(text)
        except ValueError:
            return None, ["not valid JSON"]
        if not isinstance(value, dict):
            return None, ["the arguments must be a JSON object"]
        value = drop_unset(value, parameters)
        return value, validator(value)

    async def _step(
        self, messages: list[Message], schema: JsonSchema, sampling: dict[str, Any], usage: Usage
    ) -> tuple[str, str | None]:
        body = {
            **sampling,
            "messages": messages,
            "max_tokens": self._grammar.max_tokens(schema),
            "structured_outputs": {"json": schema},
        }
        reply = await self._engine(body)
        usage.add(reply.get("usage"))
        try:
            choice = reply["choices"][0]
            return str(choice["message"].get("content") or ""), choice.get("finish_reason")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ToolCallFailedError("the engine returned a malformed completion") from exc


def _selected_names(text: str, policy: CallPolicy) -> list[str]:
    try:
        names = json.loads(text).get("tools")
    except (ValueError, AttributeError) as exc:
        raise ToolCallFailedError("the tool selection was not valid JSON (cut off?)") from exc
    if not isinstance(names, list) or not all(isinstance(n, str) and n in policy.offered for n in names):
        raise ToolCallFailedError(f"the tool selection names unknown tools: {text[:200]}")
    if len(names) < policy.min_calls:
        raise ToolCallFailedError("the tool selection is empty but a tool call is required")
    return names[: policy.max_calls]

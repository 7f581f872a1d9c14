"""Turning prompts into a candidate plan with the engine: staged, one-shot or unconstrained.

Staged: one call for the tool sequence (skipped when a skeleton or the proposal supplies it), then one
call per node for its arguments, each under its own small grammar. A node whose grammar admits one
value only (every argument already decided: planner/value_grammar.py `sole_value`) is written without
the engine; otherwise the model is asked for the node's open arguments only (`split_decided`). A node
cut off at its token budget inside a free string (a 135M model can repeat itself there) is asked again
with that argument's free strings bounded (`bound_runaway`), once per argument it runs away in: each
re-ask bounds one more, so the re-asks end. The engine client stops a stream that loops inside a string
(planner/runaway.py) rather than letting it run to the node's token budget. Every call extends the same
conversation, so each prompt is the previous one plus two turns and the engine's prefix
cache (salted per tenant) serves the shared part. What a node may be filled with (request values, references, the
step it came from) is decided by the caller's `NodeContext` function: this module only talks to the
engine and parses what comes back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.errors import PlanstackBaseError
from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.grammar import SchemaBuilder
from planner.grammar_budget import max_tokens_for
from planner.llm import Completion, Message, PlannerLLM
from planner.prompts import PromptBook, compact
from planner.value_grammar import JsonSchema, ValueContext, sole_value, split_decided
from planner.wrappers import unwrap_other

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


class DecodeError(PlanstackBaseError):
    """The model's output could not be read as the expected JSON (schema layer); the planner's retry
    loop handles it, so it never reaches a client."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


@dataclass(frozen=True)
class NodeTurn:
    """What one node's call is given: its grammar context and the prompt's step, values and references."""

    context: ValueContext
    step: str
    shown_values: Sequence[Any] = ()
    shown_refs: Sequence[str] = ()
    draft: dict[str, Any] | None = None


NodeContext = Callable[[int, str, list[str], list[dict[str, Any]]], Awaitable[NodeTurn]]
"""(node index, tool name, the plan's tools, the nodes written so far) → that node's turn."""


@dataclass
class Decoded:
    """What one decoding attempt produced: a plan-shaped dict (or an error), and what it cost."""

    candidate: dict[str, Any] | None = None
    error: DecodeError | None = None
    empty: bool = False  # the model chose no tool: "nothing fits"
    calls: list[Completion] = field(default_factory=list)
    schemas: list[dict[str, Any] | None] = field(default_factory=list)
    raw_parts: list[str] = field(default_factory=list)
    tools_from: str = "model"  # model | skeleton | proposal
    forced: int = 0  # calls answered without the engine: their schema admitted one value only
    grammars: list[JsonSchema] = field(default_factory=list)  # each node's whole argument grammar, in order

    @property
    def raw_text(self) -> str:
        return "\n".join(self.raw_parts)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    @property
    def latency_s(self) -> float:
        return sum(c.latency_s for c in self.calls)

    @property
    def decode_s_per_token(self) -> float | None:
        timed = [c for c in self.calls if c.decode_s_per_token is not None and c.ttft_s is not None]
        tokens = sum(c.completion_tokens - 1 for c in timed)
        if not tokens:
            return None
        return sum(c.latency_s - (c.ttft_s or 0.0) for c in timed) / tokens


RUNAWAY_MAX_CHARS = 48  # a free string re-asked after a cut-off: bounded, in that node's re-asks only


def bound_runaway(schema: Mapping[str, Any], text: str, max_chars: int = RUNAWAY_MAX_CHARS) -> JsonSchema | None:
    """`schema` with the free strings of the argument a cut-off answer was writing (its last key) bounded to
    `max_chars`; None when no such argument or free string is found. A bounded string costs outlines a
    large index (README "Grammar memory"), so only the re-asks of a node that ran away carry it."""
    keys = [k for k in re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:', text) if k in schema.get("properties", {})]
    if not keys:
        return None
    props = dict(schema["properties"])
    bounded = _bounded(props[keys[-1]], max_chars)
    if bounded == props[keys[-1]]:
        return None
    props[keys[-1]] = bounded
    return {**schema, "properties": props}


def _bounded(schema: Any, max_chars: int) -> Any:
    if isinstance(schema, list):
        return [_bounded(item, max_chars) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("type") == "string" and set(schema) <= {"type", "format"} and "format" not in schema:
        return {"type": "string", "maxLength": max_chars}
    return {k: _bounded(v, max_chars) if isinstance(v, (dict, list)) else v for k, v in schema.items()}


def parse_json_object(text: str, *, lenient: bool = False) -> dict[str, Any]:
    """The JSON object in `text`. Lenient (unconstrained baseline): code fences and prose around it."""
    body = text.strip()
    if lenient:
        body = _FENCE.sub("", body)
        start, end = body.find("{"), body.rfind("}")
        body = body[start : end + 1] if 0 <= start < end else body
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise DecodeError(f"not valid JSON ({exc.msg} at character {exc.pos}; output may be cut off)", text) from exc
    if not isinstance(value, dict):
        raise DecodeError("expected a JSON object", text)
    return value


def steps_to_plan(steps: Any) -> dict[str, Any]:
    """`[{"tool", "args"}]` → plan dict with ids n1..nK (position = id); null arguments dropped."""
    if not isinstance(steps, list):
        raise DecodeError("'steps' must be a list", json.dumps(steps)[:200])
    nodes = []
    for index, step in enumerate(steps, start=1):
        if not isinstance(step, dict):
            raise DecodeError(f"step {index} is not an object", json.dumps(step)[:200])
        args = step.get("args", {})
        if isinstance(args, dict):
            args = {k: v for k, v in args.items() if v is not None}
        nodes.append({"id": f"n{index}", "tool": step.get("tool"), "args": args})
    return {"nodes": nodes}


class PlanDecoder:
    def __init__(self, llm: PlannerLLM, config: PlannerConfig, prompts: PromptBook) -> None:
        self.llm = llm
        self.config = config
        self.prompts = prompts
        self.schemas = SchemaBuilder(config.grammar, config.max_nodes)

    async def staged(
        self,
        messages: list[Message],
        catalog: ToolCatalog,
        node_context: NodeContext,
        *,
        cache_salt: str | None,
        given_tools: Sequence[str] | None = None,
        given_by: str = "skeleton",
        allow_empty: bool = True,
    ) -> Decoded:
        out = Decoded()
        conversation = list(messages)
        try:
            if given_tools is not None:
                text = compact({"tools": list(given_tools)})
                out.tools_from = given_by
            else:
                text, _ = await self._call(
                    out, conversation, self.schemas.tools_schema(catalog, allow_empty=allow_empty), cache_salt
                )
            tools = parse_json_object(text).get("tools")
            if not isinstance(tools, list) or not all(isinstance(t, str) and t in catalog for t in tools):
                raise DecodeError(f"expected {{'tools': [known tool names]}}, got {text[:200]}", text)
            if not tools:
                out.empty = True
                return out
            tools = tools[: self.config.max_nodes]
            nodes: list[dict[str, Any]] = []
            for index, name in enumerate(tools):
                node_id = f"n{index + 1}"
                turn = await node_context(index, name, tools, nodes)
                prompt = self.prompts.node(node_id, name, turn.step, turn.shown_values, turn.shown_refs, turn.draft)
                conversation = [
                    *conversation,
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": prompt},
                ]
                out.grammars.append(self.schemas.args_schema(catalog.get(name), turn.context))
                schema, decided = split_decided(out.grammars[-1])
                text, finish = await self._call(out, conversation, schema, cache_salt)
                for _ in schema.get("properties", {}):  # each re-ask bounds one more argument: this loop ends
                    if finish != "length" or (bounded := bound_runaway(schema, text)) is None:
                        break
                    schema = bounded
                    text, finish = await self._call(out, conversation, schema, cache_salt)  # the same node, bounded
                written = {**parse_json_object(text), **decided}
                text = compact(written) if decided else text
                args = {k: v for k, v in unwrap_other(written).items() if v is not None}
                nodes.append({"id": node_id, "tool": name, "args": args})
            out.candidate = {"nodes": nodes}
        except DecodeError as exc:
            out.error = exc
        return out

    async def one_call(
        self, messages: list[Message], catalog: ToolCatalog, *, cache_salt: str | None, grammar: str | None
    ) -> Decoded:
        """One call for the whole plan: `grammar` "one_shot" (the rich plan schema), "bare" (tool names and
        any JSON arguments) or None (no grammar: the output is searched for a JSON object)."""
        out = Decoded()
        schema: dict[str, Any] | None = None
        if grammar == "one_shot":
            schema = self.schemas.plan_schema(catalog)
        elif grammar == "bare":
            schema = self.schemas.bare_plan_schema(catalog, self.config.max_nodes)
        try:
            text, _ = await self._call(out, messages, schema, cache_salt)
            out.candidate = steps_to_plan(parse_json_object(text, lenient=schema is None).get("steps"))
        except DecodeError as exc:
            out.error = exc
        return out

    async def _call(
        self, out: Decoded, messages: list[Message], schema: dict[str, Any] | None, cache_salt: str | None
    ) -> tuple[str, str | None]:
        """The call's text and finish reason. A schema that admits one value only is answered with that
        value without the engine (finish reason "forced"): decoding it would spend its tokens for nothing."""
        if schema is not None and (sole := sole_value(schema)) is not None:
            text = compact(sole.value)
            out.forced += 1
            out.raw_parts.append(text)
            return text, "forced"
        if schema is not None:
            max_tokens = max_tokens_for(schema, self.config.grammar, self.config.max_tokens_cap)
        else:
            max_tokens = self.config.max_tokens_cap
        completion = await self.llm.complete(messages, json_schema=schema, max_tokens=max_tokens, cache_salt=cache_salt)
        out.calls.append(completion)
        out.schemas.append(schema)
        out.raw_parts.append(completion.text)
        return completion.text, completion.finish_reason

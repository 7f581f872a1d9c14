"""Turning prompts into a candidate plan with the engine: staged, one-shot or unconstrained."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.demos import Demonstration, skeleton_refs
from planner.grammar import SchemaBuilder, max_tokens_for
from planner.llm import Completion, Message, PlannerLLM
from planner.prompts import PromptBook, compact
from planner.slots import SlotValues

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


class DecodeError(Exception):
    """The model's output could not be read as the expected JSON (schema layer)."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


@dataclass
class Decoded:
    """What one decoding attempt produced: a plan-shaped dict (or an error), and what it cost."""

    candidate: dict[str, Any] | None = None
    error: DecodeError | None = None
    calls: list[Completion] = field(default_factory=list)
    raw_parts: list[str] = field(default_factory=list)
    skeleton: bool = False  # tools and references came from a demonstration's plan

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

    async def decode(
        self,
        messages: list[Message],
        catalog: ToolCatalog,
        *,
        cache_salt: str | None,
        strategy: str | None = None,
        values: SlotValues | None = None,
        skeleton: Demonstration | None = None,
    ) -> Decoded:
        strategy = strategy or self.config.strategy
        if strategy == "staged":
            return await self.staged(messages, catalog, cache_salt=cache_salt, values=values, skeleton=skeleton)
        return await self.one_call(messages, catalog, cache_salt=cache_salt, constrained=strategy == "one_shot")

    async def staged(
        self,
        messages: list[Message],
        catalog: ToolCatalog,
        *,
        cache_salt: str | None,
        values: SlotValues | None = None,
        skeleton: Demonstration | None = None,
    ) -> Decoded:
        """Stage 1 (tools) unless a skeleton gives them; then one call per node. Every call extends the
        same conversation, so each prompt is the previous one plus two turns: the engine's prefix cache
        (salted per tenant) serves the shared part."""
        out = Decoded()
        conversation = list(messages)
        schema = self.schemas.tools_schema(catalog)
        forced = skeleton_refs(skeleton) if skeleton is not None else None
        try:
            if skeleton is not None:
                text = compact({"tools": skeleton.tools()})
                out.skeleton = True
            else:
                text = await self._call(out, conversation, schema, cache_salt)
            tools = parse_json_object(text).get("tools")
            if not isinstance(tools, list) or not tools or not all(t in catalog for t in tools):
                raise DecodeError(f"expected {{'tools': [known tool names]}}, got {text[:200]}", text)
            nodes: list[dict[str, Any]] = []
            for index, name in enumerate(tools[: self.config.max_nodes], start=1):
                node_id = f"n{index}"
                conversation = [
                    *conversation,
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": self.prompts.node(node_id, name)},
                ]
                upstream = [catalog.get(t) for t in tools[: index - 1]]
                refs = forced[index - 1] if forced is not None else None
                schema = self.schemas.args_schema(catalog.get(name), upstream, values, refs)
                text = await self._call(out, conversation, schema, cache_salt)
                args = {k: v for k, v in parse_json_object(text).items() if v is not None}
                nodes.append({"id": node_id, "tool": name, "args": args})
            out.candidate = {"nodes": nodes}
        except DecodeError as exc:
            out.error = exc
        return out

    async def one_call(
        self, messages: list[Message], catalog: ToolCatalog, *, cache_salt: str | None, constrained: bool
    ) -> Decoded:
        out = Decoded()
        schema = self.schemas.plan_schema(catalog) if constrained else None
        try:
            text = await self._call(out, messages, schema, cache_salt)
            out.candidate = steps_to_plan(parse_json_object(text, lenient=not constrained).get("steps"))
        except DecodeError as exc:
            out.error = exc
        return out

    async def _call(
        self, out: Decoded, messages: list[Message], schema: dict[str, Any] | None, cache_salt: str | None
    ) -> str:
        if schema is not None:
            max_tokens = max_tokens_for(schema, self.config.grammar, self.config.max_tokens_cap)
        else:
            max_tokens = self.config.max_tokens_cap
        completion = await self.llm.complete(messages, json_schema=schema, max_tokens=max_tokens, cache_salt=cache_salt)
        out.calls.append(completion)
        out.raw_parts.append(completion.text)
        return completion.text

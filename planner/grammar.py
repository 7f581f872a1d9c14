"""JSON schemas sent to the engine as `structured_outputs`, generated per request from the catalog.

Why staged decoding (measured, see benchmarks/results/grammar_compile.md): a one-shot plan schema
(an array of `anyOf` one object per tool) compiles in seconds to minutes under outlines and took the
shared engine down; the tiny model also runs to `max_tokens` in it. So the default strategy decodes

1. the tool sequence: `{"tools": [<enum of tool names>, ...]}` (≤ max_nodes items; one grammar per
   catalog, compiled once and then cached by vLLM), then
2. each node's arguments with that tool's own small object schema: all of its argument names, in a
   fixed order (required first, optional ones nullable), nothing else (`additionalProperties: false`).
   A string or number argument is offered the request's own values of its kind as an enum
   (planner/slots.py), references to upstream outputs as an enum of `$nK.field` options, and a free
   value only where the request has none: a string of a narrow character class bounded by `pattern`
   (never `maxLength`, which makes outlines ignore the pattern and is slow), an integer of at most
   `number_max_digits` digits. With a plan skeleton (a retrieved demonstration's structure) stage 1 is
   skipped and the skeleton's references are the only ones offered.

Every value is bounded, so each grammar has a small finite worst case, and `max_tokens` is that worst
case in characters (a token is at least one character): a model-path plan is never cut off.
Node ids (`n1..nK` by position) and edges (from references) are never decoded: they are correct by
construction, and every reference points upstream, so the plan is a DAG.
"""

from __future__ import annotations

import json
import re
import re._constants as sre_constants
import re._parser as sre_parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner import safe_regex
from planner.catalog import ToolCatalog, ToolDef
from planner.config import GrammarConfig
from planner.slots import SlotValues

JsonSchema = dict[str, Any]
_SCALARS = {"string", "number", "integer", "boolean"}
_COMPATIBLE = {
    "number": {"number", "integer"},
    "integer": {"integer"},
    "string": {"string"},
    "boolean": {"boolean"},
}


def reference_pattern(upstream_count: int) -> str:
    """Regex of a reference to one of nodes n1..n<upstream_count>, with an optional field path."""
    if upstream_count < 10:
        nodes = f"n[1-{upstream_count}]" if upstream_count > 1 else "n1"
    else:
        nodes = "n([1-9]|" + "|".join(str(i) for i in range(10, upstream_count + 1)) + ")"
    return rf"^\${nodes}(\.[A-Za-z_][A-Za-z0-9_]*){{0,2}}$"


class SchemaBuilder:
    """Builds the stage schemas; deterministic output (same inputs → same JSON → vLLM cache hit)."""

    def __init__(self, config: GrammarConfig, max_nodes: int) -> None:
        self.config = config
        self.max_nodes = max_nodes

    # stage 1 -------------------------------------------------------------------------------
    def tools_schema(self, catalog: ToolCatalog) -> JsonSchema:
        return {
            "type": "object",
            "properties": {
                "tools": {
                    "type": "array",
                    "items": {"type": "string", "enum": catalog.names()},
                    "minItems": 1,
                    "maxItems": self.max_nodes,
                }
            },
            "required": ["tools"],
            "additionalProperties": False,
        }

    # stage 2 -------------------------------------------------------------------------------
    def args_schema(
        self,
        tool: ToolDef,
        upstream: Sequence[ToolDef],
        values: SlotValues | None = None,
        forced_refs: Mapping[str, str] | None = None,
    ) -> JsonSchema:
        """The argument object of the node after `upstream` (its tools, in node order).

        `values`: the request's candidate values (intent enums; None: free bounded values).
        `forced_refs`: a plan skeleton's references (argument → `$nK.path`); when given, those are the
        only references this node may write (the skeleton fixes the edges)."""
        refs = self._reference_options(upstream) if forced_refs is None else _Refs(None, {})
        props: dict[str, Any] = {}
        required = set(tool.required)
        mode = self.config.optional_args
        for name in tool.arg_names():
            if name not in required and mode == "omit":
                continue
            need = name in required
            if forced_refs is not None and name in forced_refs:
                value: JsonSchema | None = {"enum": [forced_refs[name]]}
            else:
                value = self._value(tool.properties[name], refs, _Slot(name, need, values))
            if value is None:
                value = {"type": "null"}
            elif not need and mode == "nullable" and not _allows_null(value):
                value = {"anyOf": [value, {"type": "null"}]}
            props[name] = value
        schema: JsonSchema = {"type": "object", "properties": props, "additionalProperties": False}
        schema["required"] = list(props) if mode != "optional" else [n for n in props if n in required]
        return schema

    # one shot ------------------------------------------------------------------------------
    def plan_schema(self, catalog: ToolCatalog) -> JsonSchema:
        """Whole plan in one grammar: `{"steps": [{"tool": ..., "args": {...}}]}` (not for outlines)."""
        variants = []
        for tool in catalog:
            args = self.args_schema(tool, [])
            if self.max_nodes > 1:
                args = self._with_pattern_refs(tool, self.max_nodes - 1)
            variants.append(
                {
                    "type": "object",
                    "properties": {"tool": {"const": tool.name}, "args": args},
                    "required": ["tool", "args"],
                    "additionalProperties": False,
                }
            )
        return {
            "type": "object",
            "properties": {
                "steps": {"type": "array", "items": {"anyOf": variants}, "minItems": 1, "maxItems": self.max_nodes}
            },
            "required": ["steps"],
            "additionalProperties": False,
        }

    def _with_pattern_refs(self, tool: ToolDef, upstream_count: int) -> JsonSchema:
        saved = self.config
        self.config = saved.model_copy(update={"reference_mode": "pattern"})
        try:
            placeholder = [ToolDef("_", "", {"type": "object"})] * upstream_count
            return self.args_schema(tool, placeholder)
        finally:
            self.config = saved

    # values --------------------------------------------------------------------------------
    def _reference_options(self, upstream: Sequence[ToolDef]) -> _Refs:
        if not upstream:
            return _Refs(None, {})
        if self.config.reference_mode == "pattern" or not any(t.output_fields for t in upstream):
            return _Refs(reference_pattern(len(upstream)), {})
        by_type: dict[str, list[str]] = {}
        for index, tool in enumerate(upstream, start=1):
            by_type.setdefault("any", []).append(f"$n{index}")
            for path, kind in tool.output_fields:
                ref = f"$n{index}.{path}"
                by_type.setdefault(kind or "any", []).append(ref)
                by_type["any"].append(ref)
        return _Refs(None, by_type)

    def _value(self, schema: Mapping[str, Any], refs: _Refs, slot: _Slot) -> JsonSchema | None:
        """The grammar of one value: None when nothing may be written (the caller makes it null)."""
        if "anyOf" in schema or "oneOf" in schema:
            options = [o for o in (schema.get("anyOf") or schema.get("oneOf") or []) if o.get("type") != "null"]
            if len(options) == 1:
                merged = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
                return self._value({**merged, **options[0]}, refs, slot)
            return _union([self._value(option, refs, slot) for option in options])
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self._value({**schema, "type": k}, refs, slot) for k in kind if k != "null"])
        if "enum" in schema:  # literal choices: no references
            return {"enum": list(schema["enum"])}
        if "const" in schema:
            return {"const": schema["const"]}
        if kind == "array":
            items = self._value(schema.get("items", {}), refs, _Slot(slot.name, True, slot.values))
            limit = min(int(schema.get("maxItems", self.config.max_array_items)), self.config.max_array_items)
            array: JsonSchema = {"type": "array", "items": items or {"type": "null"}, "maxItems": limit}
            if "minItems" in schema:
                array["minItems"] = min(int(schema["minItems"]), limit)
            return array
        if kind == "object":
            fields = (schema.get("properties") or {}).items()
            props = {k: self._value(v, refs, _Slot(k, True, slot.values)) for k, v in fields}
            return {
                "type": "object",
                "properties": {k: v or {"type": "null"} for k, v in props.items()},
                "required": list(props),
                "additionalProperties": False,
            }
        if kind == "string":
            return self._string(schema, refs, slot)
        if kind in ("number", "integer"):
            return self._number(schema, str(kind), refs, slot)
        if kind in ("boolean", "null"):
            return {"type": kind}
        # untyped ("any JSON"): a reference when there is something upstream, else a free string
        options = refs.options("any")
        return {"enum": options} if options else self._free_string()

    def _string(self, schema: Mapping[str, Any], refs: _Refs, slot: _Slot) -> JsonSchema | None:
        own = schema.get("pattern")
        bounded_own = own is not None and pattern_width(own) is not None
        literal: list[str] = []
        free = slot.values is None
        if slot.values is not None:
            kind, found = slot.values.strings(slot.name)
            literal = [v for v in found if _fits(v, schema)]
            free = kind == "free" or (not literal and slot.required)
        options: list[JsonSchema] = []
        if literal:
            options.append({"enum": literal})
        if free:
            options.append({"type": "string", "pattern": own} if bounded_own else self._free_string())
        if ref_options := refs.options("string"):
            options.append({"enum": ref_options})
        if refs.pattern:
            options.append({"type": "string", "pattern": refs.pattern})
        if not options and slot.required:
            options.append(self._free_string())
        return _union(options)

    def _number(self, schema: Mapping[str, Any], kind: str, refs: _Refs, slot: _Slot) -> JsonSchema | None:
        literal: list[float | int] = []
        free = slot.values is None
        if slot.values is not None:
            literal = [
                v for v in slot.values.numbers() if (kind == "number" or isinstance(v, int)) and _in_range(v, schema)
            ]
            free = not literal and slot.required
        options: list[JsonSchema] = []
        if literal:
            options.append({"enum": literal})
        if free or (not options and slot.required):
            digits = self.config.number_max_digits
            options.append({"type": "integer", "minDigits": 1, "maxDigits": digits})
        if ref_options := refs.options(kind):
            options.append({"enum": ref_options})
        if refs.pattern:
            options.append({"type": "string", "pattern": refs.pattern})
        return _union(options)

    def _free_string(self) -> JsonSchema:
        return {"type": "string", "pattern": self.config.free_string_pattern}


def _union(options: Sequence[JsonSchema | None]) -> JsonSchema | None:
    kept = [o for o in options if o is not None]
    if not kept:
        return None
    enums = [o for o in kept if set(o) == {"enum"}]
    rest = [o for o in kept if set(o) != {"enum"}]
    if len(enums) > 1:  # one enum of all literal options: a shorter regex
        merged: list[Any] = []
        for option in enums:
            merged += [v for v in option["enum"] if v not in merged]
        enums = [{"enum": merged}]
    kept = enums + rest
    return kept[0] if len(kept) == 1 else {"anyOf": kept}


def _fits(value: str, schema: Mapping[str, Any]) -> bool:
    if "pattern" in schema and not safe_regex.search(str(schema["pattern"]), value):
        return False
    return int(schema.get("minLength", 0)) <= len(value) <= int(schema.get("maxLength", 10**6))


def _in_range(value: float, schema: Mapping[str, Any]) -> bool:
    low, high = schema.get("minimum"), schema.get("maximum")
    if schema.get("exclusiveMinimum") is not None and value <= schema["exclusiveMinimum"]:
        return False
    return (low is None or value >= low) and (high is None or value <= high)


@dataclass(frozen=True)
class _Slot:
    name: str
    required: bool
    values: SlotValues | None


def _allows_null(schema: Mapping[str, Any]) -> bool:
    if schema.get("type") == "null":
        return True
    return any(_allows_null(option) for option in schema.get("anyOf", []))


class _Refs:
    """Reference options for one node: a pattern, or enums per value type."""

    def __init__(self, pattern: str | None, by_type: dict[str, list[str]]) -> None:
        self.pattern = pattern
        self.by_type = by_type

    def options(self, kind: str) -> list[str]:
        if kind == "any":
            return list(self.by_type.get("any", []))
        wanted = _COMPATIBLE.get(kind, set())
        return [ref for k, refs in self.by_type.items() if k in wanted for ref in refs]


def max_tokens_for(schema: Mapping[str, Any], config: GrammarConfig, cap: int) -> int:
    """`max_tokens` that can never cut the grammar's output: its longest match in characters (every
    token is at least one character) + the end token. Unbounded parts (none in the staged schemas)
    count `string_tokens`; the cap wins above it (then `bounded_worst_case` is False)."""
    return max(8, min(cap, worst_case_chars(schema, config) + 2))


def worst_case_chars(schema: Mapping[str, Any], config: GrammarConfig) -> int:
    """Longest JSON text the schema's regex (outlines_core: `[ ]?` whitespace) can match."""
    if "anyOf" in schema:
        return max(worst_case_chars(option, config) for option in schema["anyOf"])
    if "enum" in schema:
        return max((len(json.dumps(v)) for v in schema["enum"]), default=2)
    if "const" in schema:
        return len(json.dumps(schema["const"]))
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return 2 + sum(len(json.dumps(k)) + 5 + worst_case_chars(v, config) for k, v in props.items())
    if kind == "array":
        items = int(schema.get("maxItems", config.max_array_items))
        return 2 + items * (worst_case_chars(schema.get("items", {}), config) + 3)
    if kind == "string":
        width = pattern_width(schema["pattern"]) if "pattern" in schema else None
        if width is None and "maxLength" in schema and "pattern" not in schema:
            width = int(schema["maxLength"]) * 6  # escapes: \uXXXX
        return 2 + (width if width is not None else config.string_tokens)
    if kind == "integer" and "maxDigits" in schema:
        return 1 + int(schema["maxDigits"])
    return {"boolean": 5, "null": 4}.get(str(kind), config.string_tokens)


def pattern_width(pattern: str) -> int | None:
    """Longest match of a regex in characters (None: unbounded)."""
    try:
        _, high = sre_parse.parse(pattern.strip("^$")).getwidth()
    except re.error:
        return None
    return None if high >= sre_constants.MAXREPEAT else int(high)

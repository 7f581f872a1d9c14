"""JSON schemas sent to the engine as `structured_outputs`, generated per request from the catalog.

Why staged decoding (measured, see benchmarks/results/grammar_compile.md): a one-shot plan schema
(an array of `anyOf` one object per tool) compiles in seconds to minutes under outlines and took the
shared engine down; the tiny model also runs to `max_tokens` in it. So the default strategy decodes

1. the tool sequence: `{"tools": [<enum of tool names>, ...]}` (≤ max_nodes items; one grammar per
   catalog, compiled once and then cached by vLLM), then
2. each node's arguments with that tool's own small object schema: all of its argument names, in a
   fixed order (required first, optional ones nullable), nothing else (`additionalProperties: false`),
   values typed from the tool's schema, and references to upstream outputs offered as an enum of
   `$nK.field` options (or a `$nK.path` pattern).

Node ids (`n1..nK` by position) and edges (from references) are never decoded: they are correct by
construction, and every reference points upstream, so the plan is a DAG. `max_tokens` for each call
comes from the schema's worst case (`max_tokens_for`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner.catalog import ToolCatalog, ToolDef
from planner.config import GrammarConfig

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
    def args_schema(self, tool: ToolDef, upstream: Sequence[ToolDef]) -> JsonSchema:
        """The argument object of the node after `upstream` (its tools, in node order)."""
        refs = self._reference_options(upstream)
        props: dict[str, Any] = {}
        names = tool.arg_names()
        required = set(tool.required)
        mode = self.config.optional_args
        for name in names:
            if name not in required and mode == "omit":
                continue
            value = self._value(tool.properties[name], refs)
            if name not in required and mode == "nullable" and not _allows_null(value):
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

    def _value(self, schema: Mapping[str, Any], refs: _Refs) -> JsonSchema:
        if "anyOf" in schema or "oneOf" in schema:
            options = schema.get("anyOf") or schema.get("oneOf") or []
            return {"anyOf": [self._value(option, refs) for option in options]}
        kind = schema.get("type")
        if isinstance(kind, list):
            return {"anyOf": [self._value({**schema, "type": k}, refs) for k in kind]}
        if "enum" in schema:  # literal choices: no references
            return {"enum": list(schema["enum"])}
        if "const" in schema:
            return {"const": schema["const"]}
        if kind == "array":
            items = self._value(schema.get("items", {}), refs)
            limit = min(int(schema.get("maxItems", self.config.max_array_items)), self.config.max_array_items)
            array: JsonSchema = {"type": "array", "items": items, "maxItems": limit}
            if "minItems" in schema:
                array["minItems"] = min(int(schema["minItems"]), limit)
            return array
        if kind == "object":
            props = {k: self._value(v, refs) for k, v in (schema.get("properties") or {}).items()}
            return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}
        if kind == "string":
            out: JsonSchema = {"type": "string"}
            if "pattern" in schema:
                out["pattern"] = schema["pattern"]
            elif self.config.string_max_length is not None:
                out["maxLength"] = min(int(schema.get("maxLength", 10**6)), self.config.string_max_length)
            return self._or_ref(out, kind, refs)
        if kind in _SCALARS or kind == "null":
            return self._or_ref({"type": kind}, kind, refs)
        # untyped ("any JSON"): a reference when there is something upstream, else a short string
        any_refs = refs.options("any")
        if any_refs:
            return {"enum": any_refs}
        if refs.pattern:
            return {"type": "string", "pattern": refs.pattern}
        return {"type": "string"}

    def _or_ref(self, value: JsonSchema, kind: Any, refs: _Refs) -> JsonSchema:
        if kind == "string" and "pattern" not in value:
            return value  # a free string already admits any reference
        if refs.pattern:
            return {"anyOf": [value, {"type": "string", "pattern": refs.pattern}]}
        options = refs.options(kind if isinstance(kind, str) else "")
        if options:
            return {"anyOf": [value, {"enum": options}]}
        return value


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
    """Worst-case output tokens of a schema (characters/3 for names, budgets for free values)."""
    estimate = _worst(schema, config)
    return max(8, min(cap, int(estimate * 1.25) + 6))


def _tokens(text: str) -> int:
    return len(text) // 3 + 1


def _worst(schema: Mapping[str, Any], config: GrammarConfig) -> int:
    if "anyOf" in schema:
        return max(_worst(option, config) for option in schema["anyOf"])
    if "enum" in schema:
        return max((_tokens(str(v)) + 2 for v in schema["enum"]), default=2)
    if "const" in schema:
        return _tokens(str(schema["const"])) + 2
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return 2 + sum(_tokens(k) + 3 + _worst(v, config) for k, v in props.items())
    if kind == "array":
        return 2 + int(schema.get("maxItems", config.max_array_items)) * (_worst(schema.get("items", {}), config) + 1)
    if kind == "string":
        if "maxLength" in schema:
            return int(schema["maxLength"]) // 2 + 2
        return config.string_tokens + 2
    return {"number": 6, "integer": 4, "boolean": 2, "null": 1}.get(str(kind), config.string_tokens)

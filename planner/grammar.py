"""JSON schemas sent to the engine as `structured_outputs`, generated per request from the catalog.

Staged decoding (planner/decoding.py) uses two kinds of grammar, both small enough to compile in well
under a second with outlines (measured: benchmarks/results/grammar_compile.md):

1. the tool sequence: `{"tools": [<enum of shortlisted tool names>, ...]}`, 0 or 1 to `max_nodes` items;
2. one argument object per node: every argument name of the tool in a fixed order (required first,
   optional ones nullable), nothing else (`additionalProperties: false`).

The grammar enforces structure — tool names, argument names, JSON types, enums, bounds, references to
earlier nodes — never "only the values we found". Each argument's value (its JSON type, the request's
candidates, the grounding mode, references) is planner/value_grammar.py; how long an answer can get at
the planner's budgets, planner/grammar_budget.py.
"""

from __future__ import annotations

from typing import Any

from planner.catalog import ToolCatalog, ToolDef
from planner.config import GrammarConfig
from planner.upstream import Upstream
from planner.value_grammar import JsonSchema, ValueContext, ValueGrammar, allows_null


class SchemaBuilder:
    """Builds the stage schemas; deterministic output (same inputs → same JSON → vLLM cache hit)."""

    def __init__(self, config: GrammarConfig, max_nodes: int) -> None:
        self.config = config
        self.max_nodes = max_nodes
        self.values = ValueGrammar(config)

    # stage 1 -------------------------------------------------------------------------------
    def tools_schema(self, catalog: ToolCatalog, *, allow_empty: bool = True) -> JsonSchema:
        return {
            "type": "object",
            "properties": {
                "tools": {
                    "type": "array",
                    "items": {"type": "string", "enum": catalog.names()},
                    "minItems": 0 if allow_empty else 1,
                    "maxItems": self.max_nodes,
                }
            },
            "required": ["tools"],
            "additionalProperties": False,
        }

    # stage 2 -------------------------------------------------------------------------------
    def args_schema(self, tool: ToolDef, context: ValueContext | None = None) -> JsonSchema:
        context = context or ValueContext()
        props: dict[str, Any] = {}
        required = set(tool.required)
        needed: list[str] = []
        mode = self.config.optional_args
        for name in tool.arg_names():
            options = context.arguments.get(name) if context.arguments is not None else None
            need = name in required or (options is not None and options.required)  # (a field its object needs)
            needed += [name] if need else []
            if not need and mode == "omit":
                continue
            sub = tool.properties[name]
            forced = context.forced_refs is not None and name in context.forced_refs
            if context.arguments is not None and not forced and (options is None or not options.supported):
                continue  # an optional argument without evidence is left out: the service's default applies
            if forced and context.forced_refs is not None:
                value: JsonSchema | None = {"enum": [context.forced_refs[name]]}
            elif name in context.refs_only and (learned := self.values.learned_ref(sub, name, context)) is not None:
                value = learned
            elif options is not None and options.typed:
                value = self.values.typed(sub if isinstance(sub, dict) else {}, options, context)
            else:
                value = self.values.argument(sub if isinstance(sub, dict) else {}, name, need, context)
            written = options is not None and not need and options.supported and (options.values or options.refs)
            if value is None:
                value = {"type": "null"}
            elif not need and mode == "nullable" and not allows_null(value) and not written:
                value = {"anyOf": [value, {"type": "null"}]}  # (an optional argument with evidence is written)
            props[name] = value
        schema: JsonSchema = {"type": "object", "properties": props, "additionalProperties": False}
        schema["required"] = list(props) if mode != "optional" else [n for n in props if n in needed]
        return schema

    # one shot (baseline) -------------------------------------------------------------------
    def plan_schema(self, catalog: ToolCatalog) -> JsonSchema:
        """Whole plan in one grammar, `{"steps": [{"tool", "args"}]}`, as a user would naively write it."""
        variants = []
        for tool in catalog:
            placeholder = [Upstream(f"n{i}", tool) for i in range(1, self.max_nodes)]
            args = self.args_schema(tool, ValueContext(upstream=placeholder))
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

    @staticmethod
    def bare_plan_schema(catalog: ToolCatalog, max_nodes: int) -> JsonSchema:
        """The naive baseline: `{"steps": [{"tool": <name>, "args": {<name>: <scalar>}}]}`. (Arguments as
        any JSON object — `{"type": "object"}` — cost outlines a 212 MB index per grammar: 128 cached
        per-request grammars of it OOM-killed the engine here.)"""
        flat = {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean", "null"]}}
        step = {
            "type": "object",
            "properties": {"tool": {"enum": catalog.names()}, "args": flat},
            "required": ["tool", "args"],
            "additionalProperties": False,
        }
        return {
            "type": "object",
            "properties": {"steps": {"type": "array", "items": step, "minItems": 1, "maxItems": max_nodes}},
            "required": ["steps"],
            "additionalProperties": False,
        }

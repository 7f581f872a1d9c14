"""The grammar of one argument's value: its JSON type's fragment, the request's candidates, references.

Every value the tool's JSON Schema allows can be written (strings bounded in length and without
`"`/`\\`; see `GrammarConfig`). Values grounded in the request (planner/values.py) are *preferred*, and
the grounding mode says how strongly:

- `free`:     the schema's own values only (strong models; candidates appear in the prompt only);
- `hybrid`:   the candidates as an enum next to the free value (same JSON type; the costliest grammar
  to compile with outlines, which builds the product of the overlapping alternatives);
- `grounded`: the candidates as an enum; a value outside them must be written as `{"other": ...}`,
  a deliberate detour a small model rarely takes by accident (planner/wrappers.py removes it).

In `free` and `hybrid` a reference is written `{"ref": "$n1.total"}` (unwrapped the same way), so that it
never overlaps a free string in the grammar.

References: `$nK` (the whole output of an upstream node) and `$nK.field` (where the upstream tool
declares an output schema) are offered where their type fits the argument's: a tool that declares an
object output offers `$nK` to object-typed (or untyped) arguments only, one that declares none
offers it everywhere. A skeleton (a retrieved
demonstration's structure) fixes the references instead. A client tool's own `pattern` never enters a
grammar (it could blow up compilation); candidates are filtered by it and validation enforces it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from planner.config import GrammarConfig, Grounding
from planner.slot_candidates import fits_string, in_range, slot_candidates
from planner.upstream import Upstream, fits
from planner.values import RequestValues
from planner.wrappers import OTHER, REF

JsonSchema = dict[str, Any]


@dataclass
class ValueContext:
    """What one node's argument grammar may offer besides the schema itself."""

    grounding: Grounding = "free"
    values: RequestValues | None = None
    span: tuple[int, int] | None = None  # the node's step in the request
    upstream: Sequence[Upstream] = ()
    forced_refs: Mapping[str, str] | None = None  # skeleton: argument → reference (the only refs offered)
    preferred: Mapping[str, Sequence[Any]] = field(default_factory=dict)  # argument → pack values, first
    excluded: Mapping[str, Sequence[Any]] = field(default_factory=dict)  # argument → values a retry removed
    refs_only: Mapping[str, Sequence[str]] = field(default_factory=dict)  # argument → the earlier nodes it takes
    arguments: Mapping[str, Any] | None = None  # argument → planner.evidence.ArgOptions; None: every argument


_SCALAR: JsonSchema = {"type": ["string", "number", "boolean", "null"]}
FREE_OBJECT: JsonSchema = {
    "type": "object",
    "additionalProperties": {
        "anyOf": [_SCALAR, {"type": "object", "additionalProperties": _SCALAR}, {"type": "array", "items": _SCALAR}]
    },
}
"""A free-form object argument: values are scalars, flat objects or lists of scalars. Any JSON object
(`{"type": "object"}`) costs outlines a 25 MB index (212 MB resident in the engine) per grammar, and
vLLM keeps 128 of them: a client's catalog of such tools could fill the engine's memory. This one is
5.8 MB; deeper values are not decodable (the README says so)."""


class ValueGrammar:
    """Builds the grammar of one value; deterministic output (same inputs → same JSON)."""

    def __init__(self, config: GrammarConfig) -> None:
        self.config = config

    def argument(
        self, schema: Mapping[str, Any], name: str, required: bool, context: ValueContext
    ) -> JsonSchema | None:
        """The grammar of a top-level argument's value (None: only null can be written)."""
        return self._value(schema, _Slot(name, required, 0), context)

    def typed(self, schema: Mapping[str, Any], options: Any, context: ValueContext) -> JsonSchema | None:
        """An argument whose values were chosen by kind and evidence (planner/evidence.py): those values,
        its references (only the given ones when there are some), and — unless the options are closed —
        the free value of its type behind the grounding mode's detour."""
        kind = schema.get("type")
        values = [v for v in options.values if v not in context.excluded.get(options.name, ())]
        refs = list(options.refs)
        if not refs and ((options.required and not values) or not options.closed):  # no literal of its kind
            refs = self._refs(kind if isinstance(kind, str) else "", context)
        ref_option = _ref_option(refs, context.grounding)
        if not values and ref_option is None and not options.closed:
            return self._value(schema, _Slot(options.name, options.required, 0), context)
        if options.closed:
            return _union([{"enum": values} if values else None, ref_option])
        free = self._value(schema, _Slot(options.name, options.required, 0), ValueContext(grounding="free"))
        return self._grounded(values, free or {"type": "string"}, context.grounding, ref_option)

    def learned_ref(self, schema: Any, name: str, context: ValueContext) -> JsonSchema | None:
        """Only references to the given earlier nodes (planner/dataflow.py: a tenant's history); None when
        none of their outputs fits the argument's type (the argument keeps its usual grammar)."""
        kind = schema.get("type") if isinstance(schema, dict) else None
        nodes = {f"${node}" for node in context.refs_only[name]}
        refs = [r for r in self._refs(kind if isinstance(kind, str) else "", context) if r.split(".")[0] in nodes]
        return _ref_option(refs, context.grounding)

    # by JSON type --------------------------------------------------------------------------
    def _value(self, schema: Mapping[str, Any], slot: _Slot, context: ValueContext) -> JsonSchema | None:
        """The grammar of one value (None: only null can be written)."""
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                options = [o for o in schema[key] if isinstance(o, dict) and o.get("type") != "null"]
                base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
                return _union([self._value({**base, **o}, slot, context) for o in options])
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self._value({**schema, "type": k}, slot, context) for k in kind if k != "null"])
        refs = self._refs(str(kind or ""), context) if slot.depth == 0 else []
        ref_option = _ref_option(refs, context.grounding)
        if "const" in schema:
            return {"const": schema["const"]}
        if "enum" in schema:
            return _union([{"enum": list(schema["enum"])}, ref_option])
        if kind == "boolean":
            return _union([{"type": "boolean"}, ref_option])
        if kind == "null":
            return {"type": "null"}
        if kind in ("integer", "number"):
            return self._number(schema, str(kind), slot, context, ref_option)
        if kind == "string":
            return self._string(schema, slot, context, ref_option)
        if kind == "array":
            return self._array(schema, slot, context, ref_option)
        if kind == "object" and isinstance(schema.get("properties"), dict) and slot.depth < self.config.max_depth:
            return self._object(schema, slot, context, ref_option)
        if kind == "object":  # an object without declared properties: a free-form object, two levels deep
            objects = [c.value for c in context.values.objects()] if context.values is not None else []
            return _union([{"enum": objects} if objects else None, ref_option, FREE_OBJECT])
        # untyped: a reference, a request value, or free text
        return _union([ref_option, self._string({}, slot, context, None)])

    def _string(
        self, schema: Mapping[str, Any], slot: _Slot, context: ValueContext, ref_option: JsonSchema | None
    ) -> JsonSchema | None:
        free = self._free_string(schema)
        found = [v for v in self._candidates(slot, context, want="string", schema=schema) if fits_string(v, schema)]
        return self._grounded(found, free, context.grounding, ref_option)

    def _number(
        self, schema: Mapping[str, Any], kind: str, slot: _Slot, context: ValueContext, ref_option: JsonSchema | None
    ) -> JsonSchema | None:
        digits = self.config.number_max_digits
        integer = {"type": "integer", "minDigits": 1, "maxDigits": digits}
        free: JsonSchema = integer if kind == "integer" else {"anyOf": [integer, {"type": "number"}]}
        found = [
            v
            for v in self._candidates(slot, context, want=kind, schema=schema)
            if (kind == "number" or float(v).is_integer()) and in_range(v, schema)
        ]
        found = [int(v) if kind == "integer" else v for v in found]
        return self._grounded(found, free, context.grounding, ref_option)

    def _array(
        self, schema: Mapping[str, Any], slot: _Slot, context: ValueContext, ref_option: JsonSchema | None
    ) -> JsonSchema | None:
        limit = min(int(schema.get("maxItems", self.config.max_array_items)), self.config.max_array_items)
        items_spec = schema.get("items")
        item_schema: Mapping[str, Any] = items_spec if isinstance(items_spec, dict) else {}
        items = self._value(item_schema, _Slot(slot.name, True, slot.depth + 1), context)
        array: JsonSchema = {"type": "array", "items": items or {"type": "null"}, "maxItems": limit}
        if "minItems" in schema:
            array["minItems"] = min(int(schema["minItems"]), limit)
        whole = []
        if context.values is not None:
            whole = [c.value for c in context.values.lists() if 0 < len(c.value) <= limit]
        lists = {"enum": whole} if whole and context.grounding != "free" else None
        return _union([lists, array, ref_option])

    def _object(
        self, schema: Mapping[str, Any], slot: _Slot, context: ValueContext, ref_option: JsonSchema | None
    ) -> JsonSchema:
        fields = schema.get("properties") or {}
        props = {
            k: self._value(v if isinstance(v, dict) else {}, _Slot(k, True, slot.depth + 1), context)
            for k, v in fields.items()
        }
        required = set(schema.get("required", []))
        for k, v in list(props.items()):
            if v is None:
                props[k] = {"type": "null"}
            elif k not in required and not allows_null(v):
                props[k] = {"anyOf": [v, {"type": "null"}]}
        obj: JsonSchema = {
            "type": "object",
            "properties": props,
            "required": list(props),
            "additionalProperties": False,
        }
        return _union([obj, ref_option]) or obj

    # grounding, candidates, references -----------------------------------------------------
    def _grounded(
        self, found: list[Any], free: JsonSchema, grounding: Grounding, ref_option: JsonSchema | None
    ) -> JsonSchema | None:
        if grounding == "free" or not found:
            return _union([ref_option, free])
        enum = {"enum": found}
        if grounding == "strict":  # a repair after a cut-off answer: the request's values only
            return _union([enum, ref_option])
        if grounding == "hybrid":
            return _union([enum, ref_option, free])
        other = {"type": "object", "properties": {OTHER: free}, "required": [OTHER], "additionalProperties": False}
        return _union([enum, ref_option, other])

    @staticmethod
    def _free_string(schema: Mapping[str, Any]) -> JsonSchema:
        """Any JSON string (escapes included): unbounded in the grammar, sized by max_tokens (GrammarConfig)."""
        fmt = schema.get("format")
        if fmt in ("date", "date-time", "time", "email", "uuid"):
            return {"type": "string", "format": fmt}
        return {"type": "string"}

    def _candidates(self, slot: _Slot, context: ValueContext, *, want: str, schema: Mapping[str, Any]) -> list[Any]:
        return slot_candidates(
            slot.name,
            schema,
            want=want,
            values=context.values,
            span=context.span,
            preferred=context.preferred.get(slot.name, ()),
            excluded=list(context.excluded.get(slot.name, ())),
            limit=self.config.candidates_per_arg,
        )

    def _refs(self, kind: str, context: ValueContext) -> list[str]:
        if context.forced_refs is not None:
            return []
        refs: list[str] = []
        for up in context.upstream:
            if fits(up.tool.output_type, kind):
                refs.append(f"${up.node_id}")
            if self.config.reference_fields:
                refs += [f"${up.node_id}.{path}" for path, k in up.tool.output_fields if fits(k, kind)]
        return refs


@dataclass(frozen=True)
class _Slot:
    name: str
    required: bool
    depth: int


def allows_null(schema: Mapping[str, Any]) -> bool:
    """The schema admits `null` (itself or one of its `anyOf` options)."""
    if schema.get("type") == "null":
        return True
    return any(allows_null(option) for option in schema.get("anyOf", []))


@dataclass(frozen=True)
class Sole:
    """The one JSON value a schema admits."""

    value: Any


_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties"})


def sole_value(schema: Mapping[str, Any]) -> Sole | None:
    """The value `schema` admits when it admits exactly one, read from its shape: a one-item `enum`, a
    `const`, `{"type": "null"}`, a one-option `anyOf`, or a closed object whose every property is
    required and itself sole. Decoding such a schema would only spend tokens on a forced output. None
    when the shape allows a choice (or is one this reading does not cover)."""
    keys = set(schema)
    if keys == {"enum"} and isinstance(schema["enum"], list) and len(schema["enum"]) == 1:
        return Sole(schema["enum"][0])
    if keys == {"const"}:
        return Sole(schema["const"])
    if keys == {"type"} and schema["type"] == "null":
        return Sole(None)
    if keys == {"anyOf"} and isinstance(schema["anyOf"], list) and len(schema["anyOf"]) == 1:
        return sole_value(schema["anyOf"][0])
    if not keys <= _OBJECT_KEYS or schema.get("type") != "object" or schema.get("additionalProperties") is not False:
        return None
    properties = schema.get("properties", {})
    if not isinstance(properties, dict) or set(schema.get("required", [])) != set(properties):
        return None
    value: dict[str, Any] = {}
    for name, sub in properties.items():
        sole = sole_value(sub) if isinstance(sub, Mapping) else None
        if sole is None:
            return None
        value[name] = sole.value
    return Sole(value)


def split_decided(schema: JsonSchema) -> tuple[JsonSchema, dict[str, Any]]:
    """A closed object schema without its decided properties (required ones that admit one value only),
    and their values. The model is asked for the open properties alone, in the schema's order: the
    decided ones would only spend tokens on forced output. Any other schema comes back whole."""
    properties = schema.get("properties")
    if schema.get("type") != "object" or schema.get("additionalProperties") is not False:
        return schema, {}
    if not isinstance(properties, dict):
        return schema, {}
    required = schema.get("required", [])
    decided: dict[str, Any] = {}
    for name, sub in properties.items():
        if name in required and isinstance(sub, Mapping) and (sole := sole_value(sub)) is not None:
            decided[name] = sole.value
    if not decided:
        return schema, {}
    asked = {**schema, "properties": {n: sub for n, sub in properties.items() if n not in decided}}
    asked["required"] = [name for name in required if name not in decided]
    return asked, decided


def _union(options: Sequence[JsonSchema | None]) -> JsonSchema | None:
    kept = [o for o in options if o is not None]
    if not kept:
        return None
    enums = [o for o in kept if set(o) == {"enum"}]
    rest = [o for o in kept if set(o) != {"enum"}]
    flat: list[JsonSchema] = []
    for option in rest:
        flat.extend(option["anyOf"] if set(option) == {"anyOf"} else [option])
    if len(enums) > 1:  # one enum of all literal options: a shorter regex
        merged: list[Any] = []
        for option in enums:
            merged += [v for v in option["enum"] if v not in merged]
        enums = [{"enum": merged}]
    kept = enums + flat
    return kept[0] if len(kept) == 1 else {"anyOf": kept}


def _ref_option(refs: list[str], grounding: Grounding) -> JsonSchema | None:
    """References as an enum of strings (grounded: free text sits behind {"other": ...}), or wrapped as
    {"ref": ...} where a free string is next to them: a string enum beside a free string makes outlines
    build their product (measured: 0.58 s against 0.09 s for one node of 4 such arguments)."""
    if not refs:
        return None
    if grounding in ("grounded", "strict"):
        return {"enum": refs}
    return {"type": "object", "properties": {REF: {"enum": refs}}, "required": [REF], "additionalProperties": False}

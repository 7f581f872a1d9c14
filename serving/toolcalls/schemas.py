"""The grammars of a tool-calling turn, shaped for outlines compile time.

An `anyOf` of one object per tool does not compile in time under outlines (a plan schema of that
shape, with bounded strings, timed out vLLM's 5 s regex compilation and failed the request), so a
turn is decoded in small steps, each with its own small schema (every one checked by the schema
guard first):

1. the selection: `{"tools": [<enum of tool names>, ...]}` with minItems 0 ("auto": an empty list
   means answer in text) or 1 ("required"), and maxItems 1 (`parallel_tool_calls: false`) or the
   configured bound; skipped for a named tool_choice;
2. per selected call, that tool's own parameter schema made decodable: optional properties become
   nullable (always written, null when unused; true optional properties are exponential in outlines)
   and are dropped again when null, `additionalProperties: false`, strings are any JSON string (a
   client's `pattern` or `maxLength` never enters the grammar: a bounded repetition of any character
   costs outlines ~35 MB of index per field and vLLM keeps 128 indexes, which filled the engine's
   memory here; a client pattern could also explode the compile), integers a bounded digit count (or
   an enum for a small range), arrays a bounded length. What the grammar does not express (patterns,
   lengths, `allOf`, numeric ranges...) the validator enforces, with one re-ask.

`max_tokens` is sized by planner/sizing.py, the planner's own sizing: the longest text a decoding
schema admits, a free string counted at its budget (`toolcalls.free_string_chars`), so a value within
budget is never cut off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner import sizing
from serving.settings import ToolCallSettings

JsonSchema = dict[str, Any]


def selection_schema(names: Sequence[str], *, min_calls: int, max_calls: int) -> JsonSchema:
    """Step 1: which tools to call now (an empty list, where allowed, means: answer in text)."""
    return {
        "type": "object",
        "properties": {
            "tools": {
                "type": "array",
                "items": {"type": "string", "enum": list(names)},
                "minItems": min_calls,
                "maxItems": max_calls,
            }
        },
        "required": ["tools"],
        "additionalProperties": False,
    }


class ArgumentGrammar:
    """Decoding schemas for tool arguments, deterministic (same tool → same JSON → engine cache hit)."""

    def __init__(self, settings: ToolCallSettings) -> None:
        self.settings = settings
        self.budget = sizing.Budget(
            free_string=settings.free_string_chars,
            number_digits=settings.number_max_digits,
            array_items=settings.max_array_items,
        )

    def arguments_schema(self, parameters: Mapping[str, Any]) -> JsonSchema:
        return self._value(parameters)

    def _value(self, schema: Any) -> JsonSchema:
        if not isinstance(schema, Mapping):
            return self._free_string()
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
                return _union([self._value({**rest, **option}) for option in schema[key] if isinstance(option, dict)])
        if "const" in schema:
            return {"const": schema["const"]}
        if isinstance(schema.get("enum"), list):
            return {"enum": list(schema["enum"])}
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self._value({**schema, "type": k}) for k in kind])
        builder = {
            "object": self._object,
            "array": self._array,
            "string": self._string,
            "integer": self._integer,
            "number": self._number,
        }.get(str(kind))
        if builder is not None:
            return builder(schema)
        if kind in ("boolean", "null"):
            return {"type": kind}
        return self._free_string()  # untyped: any JSON, written as text

    def _object(self, schema: Mapping[str, Any]) -> JsonSchema:
        found = schema.get("properties")
        properties: dict[str, Any] = found if isinstance(found, dict) else {}
        required = set(schema.get("required") or ())
        props: dict[str, JsonSchema] = {}
        for name, sub in properties.items():
            value = self._value(sub)
            props[name] = value if name in required or allows_null(value) else _union([value, {"type": "null"}])
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    def _array(self, schema: Mapping[str, Any]) -> JsonSchema:
        cap = self.settings.max_array_items
        low = min(_int(schema.get("minItems"), 0), 64)
        high = max(low, min(_int(schema.get("maxItems"), cap), cap))
        items = self._value(schema.get("items", {}))
        array: JsonSchema = {"type": "array", "items": items, "maxItems": high}
        if low:
            array["minItems"] = low
        return array

    def _string(self, schema: Mapping[str, Any]) -> JsonSchema:
        fmt = schema.get("format")
        if fmt in sizing.FORMAT_CHARS:
            return {"type": "string", "format": fmt}
        return self._free_string()  # the client's pattern / maxLength are checked by argument_validator

    def _integer(self, schema: Mapping[str, Any]) -> JsonSchema:
        low, high = _bound(schema, "minimum", "exclusiveMinimum", 1), _bound(schema, "maximum", "exclusiveMaximum", -1)
        if low is not None and high is not None and 0 <= high - low < self.settings.enum_range_max:
            return {"enum": list(range(low, high + 1))}
        digits = self.settings.number_max_digits
        out: JsonSchema = {"type": "integer", "minDigits": 1, "maxDigits": digits}
        out.update({k: schema[k] for k in ("minimum", "maximum") if isinstance(schema.get(k), int | float)})
        return out

    def _number(self, schema: Mapping[str, Any]) -> JsonSchema:
        out: JsonSchema = {
            "type": "number",
            "minDigitsFraction": 1,
            "maxDigitsFraction": 6,
            "minDigitsExponent": 1,
            "maxDigitsExponent": 2,
        }
        out.update({k: schema[k] for k in ("minimum", "maximum") if isinstance(schema.get(k), int | float)})
        return out

    @staticmethod
    def _free_string() -> JsonSchema:
        return {"type": "string"}

    # ---- sizing -----------------------------------------------------------------------------------
    def worst_case_chars(self, schema: Mapping[str, Any]) -> int:
        """Longest JSON text the decoding schema admits, a free string counted at its budget."""
        return sizing.worst_case_chars(schema, self.budget)

    def max_tokens(self, schema: Mapping[str, Any]) -> int:
        """Never below the schema's worst case when it fits under the cap (a token is ≥ 1 character)."""
        return sizing.max_tokens_for(schema, self.budget, self.settings.max_argument_tokens)


def allows_null(schema: Mapping[str, Any]) -> bool:
    if schema.get("type") == "null" or None in (schema.get("enum") or [1]):
        return True
    return any(allows_null(option) for option in schema.get("anyOf", []))


def _union(options: Sequence[JsonSchema]) -> JsonSchema:
    unique: list[JsonSchema] = []
    for option in options:
        if option not in unique:
            unique.append(option)
    return unique[0] if len(unique) == 1 else {"anyOf": unique}


def _int(value: Any, default: int) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _bound(schema: Mapping[str, Any], inclusive: str, exclusive: str, step: int) -> int | None:
    if isinstance(schema.get(inclusive), int):
        return int(schema[inclusive])
    if isinstance(schema.get(exclusive), int):
        return int(schema[exclusive]) + step
    return None

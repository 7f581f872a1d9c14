"""The grammars of a tool-calling turn, shaped for outlines compile time (DESIGN.md, "Grammar findings").

An `anyOf` of one object per tool does not compile in time under outlines, so a turn is decoded in
small steps, each with its own small schema (every one checked by the schema guard first):

1. the selection: `{"tools": [<enum of tool names>, ...]}` with minItems 0 ("auto": an empty list
   means answer in text) or 1 ("required"), and maxItems 1 (`parallel_tool_calls: false`) or the
   configured bound; skipped for a named tool_choice;
2. per selected call, that tool's own parameter schema made decodable: optional properties become
   nullable (always written, null when unused; true optional properties are exponential in outlines)
   and are dropped again when null, `additionalProperties: false`, strings without an enum or a
   bounded pattern get a bounded free pattern (never `maxLength`, which makes outlines slow and
   ignore patterns), integers a bounded digit count (or an enum for a small range), arrays a bounded
   length. What the grammar cannot express (`allOf`, numeric ranges...) the validator enforces.

`worst_case_chars` is the longest text a decoding schema admits; `max_tokens` is set from it (a token
is at least one character), so a call is never cut off.
"""

from __future__ import annotations

import json
import re
import re._constants as sre_constants
import re._parser as sre_parse
from collections.abc import Mapping, Sequence
from typing import Any

from serving.settings import ToolCallSettings

JsonSchema = dict[str, Any]
FREE_CHARS = r'[^"\\\x00-\x1f]'
_FORMAT_WIDTH = {"date": 12, "time": 24, "date-time": 40, "uuid": 38}
_MARGIN_TOKENS = 8


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

    def arguments_schema(self, parameters: Mapping[str, Any]) -> JsonSchema:
        return self._value(parameters)

    def _value(self, schema: Any) -> JsonSchema:
        if not isinstance(schema, Mapping):
            return self._free_string(0, self.settings.free_string_chars)
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
        return self._free_string(0, self.settings.free_string_chars)  # untyped: any JSON, written as text

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
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            return {"type": "string", "pattern": pattern}  # checked by argument_validator at the door
        fmt = schema.get("format")
        if fmt in _FORMAT_WIDTH:
            return {"type": "string", "format": fmt}
        high = min(_int(schema.get("maxLength"), self.settings.free_string_chars), self.settings.max_string_chars)
        low = min(_int(schema.get("minLength"), 0), high)
        return self._free_string(low, high)

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
    def _free_string(low: int, high: int) -> JsonSchema:
        return {"type": "string", "pattern": f"^{FREE_CHARS}{{{low},{high}}}$"}

    # ---- sizing -----------------------------------------------------------------------------------
    def worst_case_chars(self, schema: Mapping[str, Any]) -> int | None:
        """Longest JSON text the decoding schema admits (outlines allows one space around separators);
        None when a part is unbounded (a client pattern without a bound)."""
        if "anyOf" in schema:
            widths = [self.worst_case_chars(option) for option in schema["anyOf"]]
            return None if any(w is None for w in widths) else max(w for w in widths if w is not None)
        if "enum" in schema:
            return max((len(_compact(v)) for v in schema["enum"]), default=2)
        if "const" in schema:
            return len(_compact(schema["const"]))
        kind = schema.get("type")
        if kind == "object":
            parts = [self.worst_case_chars(v) for v in schema.get("properties", {}).values()]
            if any(p is None for p in parts):
                return None
            keys = sum(len(_compact(k)) + 4 for k in schema.get("properties", {}))
            return 4 + keys + sum(p for p in parts if p is not None)
        if kind == "array":
            item = self.worst_case_chars(schema.get("items", {}))
            return None if item is None else 4 + int(schema.get("maxItems", 0)) * (item + 2)
        if kind == "string":
            if "format" in schema:
                return _FORMAT_WIDTH.get(str(schema["format"]))
            width = pattern_width(str(schema.get("pattern", "")))
            return None if width is None else 2 + width
        if kind == "integer":
            return 1 + int(schema.get("maxDigits", self.settings.number_max_digits))
        if kind == "number":  # outlines leaves the integer part unbounded: counted as number_max_digits
            return self.settings.number_max_digits + 12
        return {"boolean": 5, "null": 4}.get(str(kind))

    def max_tokens(self, schema: Mapping[str, Any]) -> int:
        """Never below the schema's worst case when it fits under the cap (a token is ≥ 1 character)."""
        worst = self.worst_case_chars(schema)
        cap = self.settings.max_argument_tokens
        return cap if worst is None else min(cap, worst + _MARGIN_TOKENS)


def allows_null(schema: Mapping[str, Any]) -> bool:
    if schema.get("type") == "null" or None in (schema.get("enum") or [1]):
        return True
    return any(allows_null(option) for option in schema.get("anyOf", []))


def pattern_width(pattern: str) -> int | None:
    """Longest match of a regex in characters (None: unbounded or unparsable)."""
    try:
        _, high = sre_parse.parse(pattern.removeprefix("^").removesuffix("$")).getwidth()
    except (re.error, RecursionError, OverflowError):
        return None
    return None if high >= sre_constants.MAXREPEAT else int(high)


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


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))

"""How long a grammar-constrained answer can get, read from the JSON schema's structure, and the
`max_tokens` that never cuts it off.

The planner (planner/grammar_budget.py) and the gateway's tool-call decoder (serving/toolcalls/schemas.py)
both size their engine calls here. The widths are those of the regex outlines_core builds from a
schema (vLLM's outlines backend), where every separator may carry one optional space (`[ ]?`):

- object of n properties: `{ "k" : v , ... }`, 3 + sum(key + 4 + value) + 2 per comma;
- array of at most n items: `[ v , ... ]`, 4 + n * item + 2 per comma (an empty one: 3);
- enum / const: the longest literal (objects and lists literal in the same spaced form; strings as
  ASCII JSON, so a non-ASCII character counts its 6-character escape: such a character is often
  several tokens);
- string: `date` 10 and `uuid` 36 characters; `maxLength` n: 2 per character (an escape);
- integer: sign + `maxDigits`; number: sign + integer digits + `.` fraction + exponent;
- boolean 5, null 4; `anyOf`: the longest option.

What the grammar leaves unbounded is counted at a `Budget`: a free string (also an untyped value, a
free-form object, a string with a `pattern`: neither grammar emits one, and sizing a client's regex
would mean parsing it), the integer part of a number, the fraction or exponent without a digit bound,
an array without `maxItems`, and the formats whose outlines regex is open-ended (`time` and
`date-time` accept any number of fraction digits; other formats such as `email`). A value within its
budget is never cut off; a longer one is (the caller then re-asks or fails the attempt).

A token is at least one character, so the character count is an upper bound on tokens;
`max_tokens_for` adds the end-of-sequence token (and one spare) and keeps the result under the cap.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FORMAT_CHARS = {"date": 10, "uuid": 36, "time": 22, "date-time": 38}
"""Characters inside the quotes of a formatted string: exact for `date` and `uuid`; for `time` and
`date-time` (open-ended fraction digits, years) room for a well-formed value with 6 fraction digits
and a zone."""
OTHER_FORMAT_CHARS = 64  # `email`, `uri`, ...: open-ended in outlines, counted like a long value
EXPONENT_DIGITS = 3  # a double's exponent has at most 3 digits (1e308)
END_TOKENS = 2  # the end-of-sequence token, and one spare
MIN_TOKENS = 8


@dataclass(frozen=True)
class Budget:
    """What a call allows for the parts its grammar leaves unbounded (in characters)."""

    free_string: int  # inside the quotes of an unbounded string (and for any other unbounded value)
    number_digits: int  # the integer part of a number; a fraction without a digit bound
    array_items: int  # an array without maxItems


def max_tokens_for(schema: Mapping[str, Any], budget: Budget, cap: int) -> int:
    """`max_tokens` that never cuts off an answer the schema admits within `budget`, at most `cap`."""
    return max(MIN_TOKENS, min(cap, worst_case_chars(schema, budget) + END_TOKENS))


def worst_case_chars(schema: Any, budget: Budget) -> int:
    """The longest JSON text the schema's outlines regex admits, unbounded parts counted at `budget`."""
    if not isinstance(schema, Mapping):
        return 2 + budget.free_string
    if isinstance(schema.get("anyOf"), list) and schema["anyOf"]:
        return max(worst_case_chars(option, budget) for option in schema["anyOf"])
    if isinstance(schema.get("enum"), list):
        return max((literal_chars(value) for value in schema["enum"]), default=2)
    if "const" in schema:
        return literal_chars(schema["const"])
    kind = schema.get("type")
    if kind == "object":
        found = schema.get("properties")
        properties: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        if not properties and schema.get("additionalProperties", True) is not False:
            return 2 + budget.free_string  # a free-form object: open-ended
        return object_chars((_json(key), worst_case_chars(value, budget)) for key, value in properties.items())
    if kind == "array":
        items = _count(schema.get("maxItems"), budget.array_items)
        return array_chars(items, worst_case_chars(schema.get("items", {}), budget))
    if kind == "string":
        return 2 + _string_chars(schema, budget)
    if kind == "integer":
        return 1 + _count(schema.get("maxDigits"), budget.number_digits)
    if kind == "number":
        fraction = _count(schema.get("maxDigitsFraction"), budget.number_digits)
        exponent = _count(schema.get("maxDigitsExponent"), EXPONENT_DIGITS)
        return 1 + budget.number_digits + (1 + fraction) + (2 + exponent)
    if kind == "boolean":
        return 5
    if kind == "null":
        return 4
    return 2 + budget.free_string  # untyped: any value, written as text


def object_chars(members: Iterable[tuple[str, int]]) -> int:
    """`{ "k" : v , "k2" : v2 }` for (key as JSON, value width) members."""
    widths = [len(key) + 4 + value for key, value in members]
    return 3 + sum(widths) + 2 * max(len(widths) - 1, 0)


def array_chars(items: int, item: int) -> int:
    """`[ v , v ]` with at most `items` items of width `item` (outlines' array regex)."""
    return 3 if items == 0 else 4 + items * item + 2 * (items - 1)


def literal_chars(value: Any) -> int:
    """The width of one enum or const value as outlines matches it."""
    if isinstance(value, Mapping):
        if not value:
            return 4  # `{ }` with both optional spaces
        return object_chars((_json(str(key)), literal_chars(item)) for key, item in value.items())
    if isinstance(value, list):  # a literal list spaces both sides of each comma
        return 4 + sum(literal_chars(item) for item in value) + 3 * max(len(value) - 1, 0)
    return len(_json(value))


def _string_chars(schema: Mapping[str, Any], budget: Budget) -> int:
    fmt = schema.get("format")
    if isinstance(fmt, str):
        return FORMAT_CHARS.get(fmt, OTHER_FORMAT_CHARS)
    if "pattern" not in schema and isinstance(schema.get("maxLength"), int):
        return 2 * max(int(schema["maxLength"]), 0)  # each character at most a two-character escape
    return budget.free_string


def _count(value: Any, default: int) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _json(value: Any) -> str:
    return json.dumps(value)

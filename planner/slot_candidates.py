"""Which values one slot's grammar offers as an enum: pack values, the schema default, the request's best.

A slot is one value to write (an argument, an item of a list, a field of an object). Its candidates
are ranked for it by name and description (planner/value_rank.py), dates first for a date-like slot;
values a retry removed are dropped. A candidate the grammar offers is also within the slot's own bounds
(`fits_string`, `in_range`): a client's `pattern` is checked here, never put in a grammar.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from planner import safe_regex
from planner.argkinds import dateish, timeish
from planner.values import Candidate, RequestValues, rank


def slot_candidates(
    name: str,
    schema: Mapping[str, Any],
    *,
    want: str,
    values: RequestValues | None,
    span: tuple[int, int] | None,
    preferred: Sequence[Any],
    excluded: Sequence[Any],
    limit: int,
) -> list[Any]:
    """At most `limit` values of JSON type `want` for the slot `name`, best first, without repeats."""
    out: list[Any] = [v for v in preferred if _is(v, want)]
    if "default" in schema and _is(schema["default"], want):
        out.append(schema["default"])
    if values is not None:
        pool = values.numbers() if want in ("integer", "number") else values.strings()
        if want == "string":
            pool = _by_hint(pool, name, schema)
        description = str(schema.get("description", ""))
        out += [c.value for c in rank(pool, name, description, span=span, limit=limit * 2)]
    kept: list[Any] = []
    for value in out:
        if value not in kept and value not in excluded and not isinstance(value, bool):
            kept.append(value)
    return kept[:limit]


_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")


def fits_string(value: Any, schema: Mapping[str, Any]) -> bool:
    """A string candidate within the argument's own bounds, of its declared `format: uuid` and matching its
    pattern (RE2: a client pattern is never run with Python's backtracking `re`; one RE2 refuses was
    rejected with the catalog)."""
    if not isinstance(value, str) or not int(schema.get("minLength", 0)) <= len(value) <= int(
        schema.get("maxLength", 10**6)
    ):
        return False
    if schema.get("format") == "uuid" and not _UUID.fullmatch(value):
        return False  # "the pg-data-01 volume" names a volume whose id is a UUID: a name, not its id
    pattern = schema.get("pattern")
    if not isinstance(pattern, str):
        return True
    try:
        return safe_regex.search(pattern, value)
    except safe_regex.UnsafePattern:
        return False


def in_range(value: float, schema: Mapping[str, Any]) -> bool:
    """A number candidate within the argument's `minimum`/`maximum` (exclusive ones too)."""
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(schema.get("exclusiveMinimum"), (int, float)) and value <= schema["exclusiveMinimum"]:
        return False
    if isinstance(schema.get("exclusiveMaximum"), (int, float)) and value >= schema["exclusiveMaximum"]:
        return False
    return (not isinstance(low, (int, float)) or value >= low) and (not isinstance(high, (int, float)) or value <= high)


def _is(value: Any, want: str) -> bool:
    if isinstance(value, bool):
        return False
    if want in ("integer", "number"):
        return isinstance(value, (int, float))
    return isinstance(value, str)


def _by_hint(pool: Sequence[Candidate], name: str, schema: Mapping[str, Any]) -> list[Candidate]:
    """Dates first for date-like arguments and times for time-like ones; the rest keep their order."""
    fmt = str(schema.get("format", ""))
    if dateish(name, dict(schema)):
        return sorted(pool, key=lambda c: c.kind not in ("date", "datetime"))
    if fmt == "time" or timeish(name):
        return sorted(pool, key=lambda c: c.kind != "time")
    return list(pool)

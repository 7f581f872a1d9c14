"""Measures the request says in one unit for an argument the API declares in another.

"Stores within 5 km of …" for Woosmap's `radius` ("Unit in meters") is `radius: 5000`; "mute it for 2
hours" for a `duration` "in seconds" is 7200. A number argument whose description declares a unit of
length or of time ("in meters", "Unit in meters", "in meter", "in seconds", "(minutes)") takes the one
measure of that dimension the step writes (a number with its unit right after it: "5 km", "20 miles",
"30 minutes"), converted to the declared unit; the value is rounded to a whole number when the argument
is an integer. Units are the fixed SI and imperial ones below: no word list of the request's language is
needed beyond the unit's own names and abbreviations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from planner.values import Candidate

# unit name → (dimension, size in the dimension's base unit: metres, seconds)
_UNITS: dict[str, tuple[str, float]] = {
    **dict.fromkeys(("m", "meter", "meters", "metre", "metres"), ("length", 1.0)),
    **dict.fromkeys(("km", "kilometer", "kilometers", "kilometre", "kilometres"), ("length", 1000.0)),
    **dict.fromkeys(("mi", "mile", "miles"), ("length", 1609.344)),
    **dict.fromkeys(("ft", "foot", "feet"), ("length", 0.3048)),
    **dict.fromkeys(("ms", "millisecond", "milliseconds"), ("time", 0.001)),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), ("time", 1.0)),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), ("time", 60.0)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), ("time", 3600.0)),
    **dict.fromkeys(("day", "days"), ("time", 86400.0)),
}
_NAMES = "|".join(sorted((re.escape(u) for u in _UNITS if len(u) > 2), key=len, reverse=True))
# "Unit in meters", "in meter", "distance in meters within which", "(in seconds)", "Duration, seconds."
_DECLARED = re.compile(rf"\b(?:unit(?:s)?\s+(?:is\s+|in\s+)?|in\s+|measured\s+in\s+)({_NAMES})\b", re.IGNORECASE)


_EPOCH = re.compile(r"\b(?:since|epoch|timestamp|unix)\b", re.IGNORECASE)


def declared_unit(schema: Mapping[str, Any]) -> tuple[str, float] | None:
    """The unit a number argument's description declares: (dimension, size of the unit), else None; None
    too when it declares units of two sizes (a conversion it does not say which way)."""
    if schema.get("type") not in ("number", "integer"):
        return None
    text = str(schema.get("description", ""))[:2000]
    if _EPOCH.search(text):
        return None  # a moment counted in seconds since 1970, not a duration (planner/dates.py)
    found = {_UNITS[m.lower()] for m in _DECLARED.findall(text)}
    return found.pop() if len(found) == 1 else None


def said_measures(inside: Sequence[Candidate], dimension: str) -> list[float]:
    """The step's numbers of `dimension` with their unit right after them, in the base unit."""
    out = []
    for c in inside:
        unit = _UNITS.get(c.tail.lower()) if c.is_number and c.written and c.tail else None
        if unit is not None and unit[0] == dimension:
            out.append(float(c.value) * unit[1])
    return out


def declared_measure(schema: Mapping[str, Any], inside: Sequence[Candidate]) -> list[Any]:
    """The one measure of the step fit for this argument, in the unit its description declares ([] when
    it declares none, or the step writes none or several of its dimension)."""
    declared = declared_unit(schema)
    if declared is None:
        return []
    measures = set(said_measures(inside, declared[0]))
    if len(measures) != 1:
        return []
    value = measures.pop() / declared[1]
    if schema.get("type") == "integer" or value.is_integer():
        rounded = round(value)
        return [rounded] if abs(rounded - value) < 1e-6 or schema.get("type") == "integer" else [value]
    return [round(value, 6)]

"""The two wrappers an argument grammar may put around a value, and their removal from a decoded answer.

- `{"other": v}`: in `grounded` mode, a value outside the request's candidates (a deliberate detour);
- `{"ref": r}`: in `free` and `hybrid` mode, a reference to an earlier output, so that it never
  overlaps a free string in the grammar.

The grammar writes them (planner/value_grammar.py); `unwrap_other` takes them off what was decoded.
"""

from __future__ import annotations

from typing import Any

OTHER = "other"
REF = "ref"


def wrap_reference(value: Any) -> Any:
    """A reference string as `free`/`hybrid` grammars write it: `{"ref": "$n1.x"}`."""
    if isinstance(value, str) and value.startswith("$n"):
        return {REF: value}
    if isinstance(value, list):
        return [wrap_reference(v) for v in value]
    return value


def unwrap_other(value: Any) -> Any:
    """`{"other": v}` (the grounded detour) and `{"ref": r}` (a wrapped reference) → v / r, at any depth."""
    if isinstance(value, dict):
        if len(value) == 1 and (OTHER in value or REF in value):
            return unwrap_other(next(iter(value.values())))
        return {k: unwrap_other(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap_other(v) for v in value]
    return value

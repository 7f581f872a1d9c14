"""Validating decoded arguments against the client's own tool schema.

`argument_validator(schema)` is the ONE place where a client's JSON schema (and every regex in it:
`pattern`, `patternProperties`) is turned into something that runs on values. Python's `re`
backtracks, so a pattern such as `^(a|a)*$` takes exponential time on a value that almost matches;
every regex keyword is matched by RE2 instead (planner/safe_regex.py, linear time), and a pattern RE2
cannot take (back-references, look-arounds) is refused at the door. Everything else is jsonschema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError

from planner import safe_regex
from serving.errors import InvalidRequestError

ArgumentCheck = Callable[[Any], list[str]]


class UnsafeSchemaError(InvalidRequestError):
    """A client's tool schema (or one of its patterns) the gateway will not run on values."""

    code = "invalid_tools"


def check_pattern(pattern: Any) -> None:
    """Refuse a client regex RE2 cannot take (invalid, too long, back-references, look-arounds);
    every other pattern, nested repeats included, matches in linear time."""
    try:
        safe_regex.compile_pattern(pattern)
    except safe_regex.UnsafePattern as exc:
        raise UnsafeSchemaError(str(exc)) from exc


def patterns_of(schema: Any) -> Iterator[Any]:
    """Every regex in a schema: `pattern` values and `patternProperties` keys, at any depth."""
    if isinstance(schema, list):
        for item in schema:
            yield from patterns_of(item)
        return
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        if key == "pattern":
            yield value
        elif key == "patternProperties" and isinstance(value, dict):
            yield from value.keys()
            yield from patterns_of(list(value.values()))
        elif key not in ("enum", "const", "default", "examples"):
            yield from patterns_of(value)


def argument_validator(schema: dict[str, Any], *, checked: bool = False) -> ArgumentCheck:
    """The checker of one tool's arguments: a function returning the problems of a value (empty: valid).

    Raises UnsafeSchemaError for a schema that is not valid JSON Schema or holds a refused pattern.
    `checked`: the schema comes from a ToolCatalog, which has meta-validated it and its patterns
    already (the costly part: about 12 ms per 6 KB tool), so that is not done twice."""
    try:
        if not checked:
            for pattern in patterns_of(schema):
                check_pattern(pattern)
            Draft202012Validator.check_schema(schema, format_checker=safe_regex.FORMAT_CHECKER)
        validator = safe_regex.schema_validator(schema)  # every regex keyword matched by RE2, never Python re
    except SchemaError as exc:
        raise UnsafeSchemaError(f"not a valid JSON Schema ({exc.message})") from exc
    except safe_regex.UnsafePattern as exc:
        raise UnsafeSchemaError(str(exc)) from exc

    def problems(value: Any) -> list[str]:
        found: list[ValidationError] = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        return [_describe(error) for error in found[:5]]

    return problems


def _describe(error: ValidationError) -> str:
    where = "/".join(str(part) for part in error.path) or "(arguments)"
    return f"{where}: {error.message[:200]}"

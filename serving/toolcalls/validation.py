"""Validating decoded arguments against the client's own tool schema.

`argument_validator(schema)` is the ONE place where a client's JSON schema (and every regex in it:
`pattern`, `patternProperties`) is turned into something that runs on values. Python's `re`
backtracks, so a pattern such as `^(a|a)*$` takes exponential time on a value that almost matches:
until a linear-time engine is wired in, patterns whose shape can backtrack exponentially (a repeat
inside a repeat, an alternation under a repeat, back-references, look-arounds) are refused at the
door, and the values they run on are bounded by the grammar. Everything else is plain jsonschema.
"""

from __future__ import annotations

import re
import re._constants as sre_constants
import re._parser as sre_parse
from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError

from planner import safe_regex

MAX_PATTERN_CHARS = 512
_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT}
_NOT_REGULAR = {sre_constants.GROUPREF, sre_constants.GROUPREF_EXISTS, sre_constants.ASSERT, sre_constants.ASSERT_NOT}

ArgumentCheck = Callable[[Any], list[str]]


class UnsafeSchemaError(ValueError):
    """A tool schema (or one of its patterns) the gateway will not run on values."""

    retryable = False


def _walk(parsed: Any, under_repeat: bool) -> Iterator[str]:
    """Reasons a parsed regex may backtrack exponentially (empty: its shape is safe)."""
    for op, argument in parsed:
        if op in _NOT_REGULAR:
            yield "back-references and look-arounds are not supported"
        elif op in _REPEATS:
            low, high, body = argument
            repeats = high > 1
            if repeats and under_repeat:
                yield "a repeated group inside a repeated group"
            yield from _walk(body, under_repeat or repeats)
        elif op == sre_constants.BRANCH:
            if under_repeat:
                yield "an alternation inside a repeated group"
            for branch in argument[1]:
                yield from _walk(branch, under_repeat)
        elif op == sre_constants.SUBPATTERN:
            yield from _walk(argument[-1], under_repeat)
        elif op == sre_constants.ATOMIC_GROUP:
            yield from _walk(argument, under_repeat)


def check_pattern(pattern: Any) -> None:
    """Refuse a client regex that is invalid, too long, or whose shape can backtrack exponentially."""
    # RE2 validator from planner.safe_regex when merged: then every RE2-compatible pattern is accepted.
    if not isinstance(pattern, str):
        raise UnsafeSchemaError("a pattern must be a string")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UnsafeSchemaError(f"a pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}")
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise UnsafeSchemaError(f"invalid pattern {pattern[:60]!r}: {exc}") from exc
    reasons = sorted(set(_walk(parsed, False)))
    if reasons:
        raise UnsafeSchemaError(f"pattern {pattern[:60]!r} is refused: {'; '.join(reasons)} (such patterns can take "
                                "exponential time to match)")  # fmt: skip


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


def argument_validator(schema: dict[str, Any]) -> ArgumentCheck:
    """The checker of one tool's arguments: a function returning the problems of a value (empty: valid).

    Raises UnsafeSchemaError for a schema that is not valid JSON Schema or holds a refused pattern."""
    for pattern in patterns_of(schema):
        check_pattern(pattern)
    try:
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

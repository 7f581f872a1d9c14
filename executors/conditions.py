"""`success_condition`: a JMESPath expression evaluated against a node's output.

JMESPath is a query language with no access to Python: an expression can only read the JSON it is
given, so a condition written by a model is data, never code (nothing here calls eval/exec).
Truthiness follows JMESPath: null, false, "", [] and {} are false; every number (0 included) is true.

`check_condition` never raises: it returns a `ConditionOutcome` whose `error` is a
`ConditionFailed` (falsy result) or an `InvalidCondition` (unparsable, too long, or a type error
while evaluating).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from executors.errors import ConditionFailed, ExecutorError, InvalidCondition

DEFAULT_MAX_CHARS = 500


@dataclass(frozen=True)
class ConditionOutcome:
    expression: str
    passed: bool
    value: Any = None
    error: ExecutorError | None = None


def compile_expression(expression: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
    """A compiled JMESPath expression; raises InvalidCondition (never anything else)."""
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidCondition("success_condition is empty")
    if len(expression) > max_chars:
        raise InvalidCondition(f"success_condition is {len(expression)} characters long (max {max_chars})")
    try:
        return jmespath.compile(expression)
    except (JMESPathError, RecursionError, ValueError, TypeError) as exc:
        raise InvalidCondition(
            f"success_condition {_quote(expression)} is not valid JMESPath: {_first_line(exc)}"
        ) from None


def evaluate(expression: str, document: Any, *, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
    """The value of `expression` over `document`; raises InvalidCondition on any failure."""
    compiled = compile_expression(expression, max_chars=max_chars)
    try:
        return compiled.search(document)
    except (JMESPathError, RecursionError, ValueError, TypeError, KeyError, IndexError) as exc:
        raise InvalidCondition(
            f"success_condition {_quote(expression)} failed to evaluate: {_first_line(exc)}"
        ) from None


def is_truthy(value: Any) -> bool:
    """JMESPath truthiness: false for null, false, "", [], {}; true otherwise (0 included)."""
    if value is None or value is False:
        return False
    if isinstance(value, (str, list, dict)):
        return len(value) > 0
    return True


def check_condition(expression: str, output: Any, *, max_chars: int = DEFAULT_MAX_CHARS) -> ConditionOutcome:
    """Evaluate a success condition; never raises."""
    try:
        value = evaluate(expression, output, max_chars=max_chars)
    except InvalidCondition as exc:
        return ConditionOutcome(expression, passed=False, error=exc)
    if is_truthy(value):
        return ConditionOutcome(expression, passed=True, value=value)
    failed = ConditionFailed(f"success_condition {_quote(expression)} is false on the output (value: {_short(value)})")
    return ConditionOutcome(expression, passed=False, value=value, error=failed)


def _quote(expression: str) -> str:
    return repr(expression if len(expression) <= 80 else expression[:77] + "...")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:160] if text else type(exc).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

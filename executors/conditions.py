"""`success_condition`: a bounded JMESPath expression evaluated against a node's output.

JMESPath is a query language with no access to Python: an expression can only read the JSON it is
given, so a condition written by a model or a client is data, never code (nothing here calls
eval/exec). Truthiness follows JMESPath: null, false, "", [] and {} are false; every number (0
included) is true.

Unbounded, the language is not cheap: `[@,@][]` doubles its input, so `[@,@][]|` repeated 22 times
(176 characters) built a list of 4 million elements and held the event loop for 2.5 s. So a
condition is bounded twice:

- **the language** (`condition_problem`, checked when a plan is validated and again before
  evaluation): only JMESPath's own node types and built-in functions, at most `MAX_NODES` AST nodes
  nested at most `MAX_DEPTH` deep, at most `MAX_FANOUT_NODES` projections/flattens/multi-selects,
  and a product of multi-select widths (the only construct that multiplies data) of at most
  `MAX_FANOUT`; literals at most `MAX_LITERAL_CHARS` long;
- **the evaluation** (`BoundedInterpreter`): an output over `MAX_INPUT_BYTES` of JSON is not
  evaluated; every intermediate list is at most `MAX_ITEMS` long and every string at most
  `MAX_STRING_CHARS`; the interpreter stops itself after `EVAL_TIMEOUT_S`. The scheduler evaluates
  conditions in a worker process (executors/condition_worker.py), never on the event loop.

Worst allowed condition on the largest allowed output: see the README's reliability table
(`python -m benchmarks.condition_worst_case`).

`check_condition` never raises: it returns a `ConditionOutcome` whose `error` is a
`ConditionFailed` (falsy result) or an `InvalidCondition` (unparsable, outside the bounds, or an
error while evaluating).
"""

from __future__ import annotations

import json
import reprlib
import time
from dataclasses import dataclass
from typing import Any

from jmespath import functions as jmespath_functions
from jmespath.exceptions import JMESPathError
from jmespath.visitor import Options, TreeInterpreter

from contract import conditions as contract_conditions
from contract.conditions import DEFAULT_MAX_CHARS, ConditionLanguageError, first_line, quote_expression
from contract.errors import PlanstackBaseError
from executors.errors import ConditionFailed, ExecutorError, InvalidCondition

MAX_INPUT_BYTES = 1_048_576
MAX_ITEMS = 100_000
MAX_STRING_CHARS = 1_000_000
EVAL_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class ConditionOutcome:
    expression: str
    passed: bool
    value: Any = None
    error: ExecutorError | None = None


def compile_expression(expression: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
    """The parsed, bounds-checked expression; raises InvalidCondition (never anything else)."""
    try:
        return contract_conditions.compile_expression(expression, max_chars=max_chars)
    except ConditionLanguageError as exc:
        raise InvalidCondition(exc.message) from None


# ---- the evaluation bound ----------------------------------------------------------------------
class _EvaluationTooLarge(PlanstackBaseError):
    """An evaluation past a bound (time, list or string size); becomes `InvalidCondition` below."""


_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)


class _BoundedFunctions(jmespath_functions.Functions):
    """JMESPath's built-in functions; `to_string` encodes in chunks and stops at the string cap, so
    that it never builds (in one C call holding the GIL) a string of 8 copies of a 1 MiB output."""

    @jmespath_functions.signature({"types": []})
    def _func_to_string(self, arg: Any) -> str:
        if isinstance(arg, str):
            return arg
        parts: list[str] = []
        size = 0
        for chunk in _ENCODER.iterencode(arg):
            size += len(chunk)
            if size > MAX_STRING_CHARS:
                raise _EvaluationTooLarge(f"it built a string of more than {MAX_STRING_CHARS} characters")
            parts.append(chunk)
        return "".join(parts)


_FUNCTIONS = _BoundedFunctions()


class BoundedInterpreter(TreeInterpreter):
    """JMESPath's interpreter with a deadline and a cap on every intermediate list and string."""

    def __init__(self, deadline: float) -> None:
        super().__init__(Options(custom_functions=_FUNCTIONS))
        self._deadline = deadline
        self._visits = 0

    def visit(self, node: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        self._visits += 1
        if self._visits % 256 == 0 and time.monotonic() > self._deadline:
            raise _EvaluationTooLarge(f"it took longer than {EVAL_TIMEOUT_S:g} s")
        result = super().visit(node, *args, **kwargs)
        if isinstance(result, list) and len(result) > MAX_ITEMS:
            raise _EvaluationTooLarge(f"it built a list of more than {MAX_ITEMS} items")
        if isinstance(result, str) and len(result) > MAX_STRING_CHARS:
            raise _EvaluationTooLarge(f"it built a string of more than {MAX_STRING_CHARS} characters")
        return result


def evaluate(expression: str, document: Any, *, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
    """The value of `expression` over `document`; raises InvalidCondition on any failure."""
    compiled = compile_expression(expression, max_chars=max_chars)
    size = _json_size(document)
    if size > MAX_INPUT_BYTES:
        raise InvalidCondition(
            f"success_condition {quote_expression(expression)} not evaluated: the output is {size} bytes of JSON "
            f"(conditions are checked on outputs of at most {MAX_INPUT_BYTES})"
        )
    interpreter = BoundedInterpreter(time.monotonic() + EVAL_TIMEOUT_S)
    try:
        return interpreter.visit(compiled.parsed, document)
    except _EvaluationTooLarge as exc:
        raise InvalidCondition(f"success_condition {quote_expression(expression)} stopped: {exc}") from None
    except (JMESPathError, RecursionError, ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        raise InvalidCondition(
            f"success_condition {quote_expression(expression)} failed to evaluate: {first_line(exc)}"
        ) from None


def is_truthy(value: Any) -> bool:
    """JMESPath truthiness: false for null, false, "", [], {}; true otherwise (0 included)."""
    if value is None or value is False:
        return False
    if isinstance(value, (str, list, dict)):
        return len(value) > 0
    return True


def check_condition(expression: str, output: Any, *, max_chars: int = DEFAULT_MAX_CHARS) -> ConditionOutcome:
    """Evaluate a success condition; never raises. Blocking: in async code use
    `executors.condition_worker.ConditionEvaluator`."""
    try:
        value = evaluate(expression, output, max_chars=max_chars)
    except InvalidCondition as exc:
        return ConditionOutcome(expression, passed=False, error=exc)
    if is_truthy(value):
        return ConditionOutcome(expression, passed=True, value=value)
    failed = ConditionFailed(
        f"success_condition {quote_expression(expression)} is false on the output (value: {_short(value)})"
    )
    return ConditionOutcome(expression, passed=False, value=value, error=failed)


def _json_size(document: Any) -> int:
    try:
        return len(json.dumps(document, separators=(",", ":"), ensure_ascii=False, default=str))
    except (ValueError, TypeError, RecursionError):
        return MAX_INPUT_BYTES + 1  # not JSON (or absurdly nested): never evaluated


_REPR = reprlib.Repr()
_REPR.maxlist = _REPR.maxdict = 6
_REPR.maxstring = _REPR.maxother = 40
_REPR.maxlevel = 3


def _short(value: Any) -> str:
    text = _REPR.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

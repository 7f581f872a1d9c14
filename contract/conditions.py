"""The success-condition language: JMESPath, bounded before anything evaluates it.

A node's `success_condition` is a JMESPath expression over its output. JMESPath is a query language
with no access to Python, so a condition written by a model or a client is data, never code. The
language is bounded here, statically (planner validation and the executors both check it): only
JMESPath's own node types and built-in functions, at most `MAX_NODES` AST nodes nested at most
`MAX_DEPTH` deep, at most `MAX_FANOUT_NODES` projections/flattens/multi-selects, a product of
multi-select widths (the only construct that multiplies data) of at most `MAX_FANOUT`, literals at
most `MAX_LITERAL_CHARS` long. The evaluation bounds (input size, intermediate sizes, deadline) live
with the evaluator in `executors.conditions`.
"""

from __future__ import annotations

import json
from typing import Any

from jmespath import functions as jmespath_functions
from jmespath.exceptions import JMESPathError
from jmespath.parser import Parser

from contract.errors import PlanstackBaseError


class ConditionLanguageError(PlanstackBaseError):
    """The expression is empty, too long, not JMESPath, or outside the allowed language."""

    status = 400
    type = "invalid_request_error"
    code = "invalid_condition"


DEFAULT_MAX_CHARS = 500
MAX_NODES = 64
MAX_DEPTH = 16
MAX_FANOUT_NODES = 8
MAX_FANOUT = 8
MAX_LITERAL_CHARS = 256

NODE_TYPES = frozenset(
    {
        "and_expression", "comparator", "current", "expref", "field", "filter_projection", "flatten",
        "function_expression", "identity", "index", "index_expression", "key_val_pair", "literal",
        "multi_select_dict", "multi_select_list", "not_expression", "or_expression", "pipe",
        "projection", "slice", "subexpression", "value_projection",
    }
)  # fmt: skip
FANOUT_TYPES = frozenset(
    {"projection", "value_projection", "filter_projection", "flatten", "multi_select_list", "multi_select_dict"}
)
FUNCTIONS = frozenset(
    name.removeprefix("_func_") for name in dir(jmespath_functions.Functions) if name.startswith("_func_")
)


# ---- the language bound ------------------------------------------------------------------------
def _parse(expression: str, max_chars: int) -> Any:
    if not isinstance(expression, str) or not expression.strip():
        raise ConditionLanguageError("success_condition is empty")
    if len(expression) > max_chars:
        raise ConditionLanguageError(f"success_condition is {len(expression)} characters long (max {max_chars})")
    try:
        return Parser().parse(expression)
    except (JMESPathError, RecursionError, ValueError, TypeError) as exc:
        raise ConditionLanguageError(
            f"success_condition {quote_expression(expression)} is not valid JMESPath: {first_line(exc)}"
        ) from None


def _check_bounds(expression: str, ast: dict[str, Any]) -> None:
    """Raise ConditionLanguageError when the AST is outside the allowed language (iterative walk)."""
    nodes = fanout_nodes = 0
    fanout = 1
    stack: list[tuple[Any, int]] = [(ast, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict):  # slice bounds are plain ints or None
            continue
        kind = node.get("type")
        nodes += 1
        problem = None
        if kind not in NODE_TYPES:
            problem = f"{kind!r} is not allowed"
        elif kind == "function_expression" and node.get("value") not in FUNCTIONS:
            problem = f"unknown function {str(node.get('value'))[:40]!r}"
        elif kind == "literal" and len(json.dumps(node.get("value"), default=str)) > MAX_LITERAL_CHARS:
            problem = f"a literal is longer than {MAX_LITERAL_CHARS} characters"
        elif depth > MAX_DEPTH:
            problem = f"it nests deeper than {MAX_DEPTH} levels"
        elif nodes > MAX_NODES:
            problem = f"it has more than {MAX_NODES} parts"
        if kind in FANOUT_TYPES:
            fanout_nodes += 1
            if kind.startswith("multi_select"):
                fanout *= max(len(node.get("children", ())), 1)
            if fanout_nodes > MAX_FANOUT_NODES:
                problem = f"it has more than {MAX_FANOUT_NODES} projections, flattens and multi-selects"
            elif fanout > MAX_FANOUT:
                problem = f"its multi-selects multiply the data by more than {MAX_FANOUT}"
        if problem is not None:
            raise ConditionLanguageError(
                f"success_condition {quote_expression(expression)} is outside the allowed language: {problem}"
            )
        stack.extend((child, depth + 1) for child in node.get("children", ()))


def compile_expression(expression: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
    """The parsed, bounds-checked expression; raises ConditionLanguageError (never anything else)."""
    parsed = _parse(expression, max_chars)
    _check_bounds(expression, parsed.parsed)
    return parsed


def condition_problem(expression: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> str | None:
    """Why `expression` may not be a success condition, or None: for plan validation."""
    try:
        compile_expression(expression, max_chars=max_chars)
    except ConditionLanguageError as exc:
        return exc.message
    return None



def quote_expression(expression: str) -> str:
    return repr(expression if len(expression) <= 80 else expression[:77] + "...")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:160] if text else type(exc).__name__

"""Client-supplied regular expressions, matched in linear time (RE2), never with Python's `re`.

Python's `re` backtracks: `^(a|a)*$` on 24 characters took 0.6 s of the event loop, 40 characters
would take hours. Every `pattern` a client sends (tool argument schemas for the planner, JSON
schemas it validates values against) is compiled here with RE2 (`google-re2`), whose matching time
is linear in the text. RE2 refuses what it cannot do in linear time (backreferences, lookaround),
and so does this module: such a pattern is an `UnsafePattern`, and a catalog that has one is
rejected at the door (planner/catalog.py) instead of being matched slowly later.

Compiling is not free either: RE2 builds a program whose size a client controls (`\\pL{400}` is 478k
instructions, 0.9 s and 4.8 MiB to compile with RE2's default 8 MiB budget, and it holds the GIL).
So each pattern compiles under a small memory budget (`RE2_MAX_MEM`: about 16k instructions at the
most, refused within milliseconds past it), and a `PatternBudget` bounds how many patterns one client
structure (a tool catalog) may hold and their total program size, counted before and while they
compile: a catalog over it is refused without compiling the rest.

`schema_validator` is jsonschema's Draft 2020-12 with every regex keyword routed here: `pattern`,
`patternProperties`, `additionalProperties` (which consults `patternProperties`) and
`format: "regex"`. `unevaluatedProperties` next to `patternProperties` would fall back to Python
`re` inside jsonschema, so that combination is refused.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import re2
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
from jsonschema.protocols import Validator

from contract.errors import PlanstackBaseError

MAX_PATTERN_CHARS = 1000
RE2_MAX_MEM = 256 << 10  # RE2's memory budget per pattern: programs of about 16k instructions at the most
MAX_PATTERNS = 128  # patterns in one client structure (a tool catalog)
MAX_PROGRAM_TOTAL = 20_000  # RE2 instructions over all of them: about 40 ms of compiling at the worst measured rate
_CACHE_SIZE = 256  # compiled patterns kept: at most RE2_MAX_MEM each


class UnsafePattern(PlanstackBaseError):
    """A pattern RE2 does not support (backreferences, lookaround...) or one that is too long; always
    a client's pattern (in a tool schema or a `response_format`): 400."""

    status = 400
    type = "invalid_request_error"


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the error comes back as UnsafePattern, not on stderr
    options.max_mem = RE2_MAX_MEM
    return options


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compiled(pattern: str) -> tuple[Any, str | None]:
    """(compiled RE2, None) or (None, why it is refused); cached both ways."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return None, f"the pattern is {len(pattern)} characters long (at most {MAX_PATTERN_CHARS})"
    try:
        return re2.compile(pattern, _options()), None
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        return None, f"not supported by the linear-time regex engine (RE2): {reason[:200]}"
    except (TypeError, ValueError, UnicodeError) as exc:
        return None, f"not a usable pattern: {exc}"[:240]


def compile_pattern(pattern: str) -> Any:
    """The cached RE2 program for `pattern`; raises UnsafePattern."""
    if not isinstance(pattern, str):
        raise UnsafePattern(f"a pattern must be a string, not {type(pattern).__name__}")
    compiled, problem = _compiled(pattern)
    if problem is not None:
        raise UnsafePattern(f"pattern {_show(pattern)}: {problem}")
    return compiled


def program_size(pattern: str) -> int:
    """RE2 instructions of the compiled `pattern` (what compiling it cost); raises UnsafePattern."""
    return int(compile_pattern(pattern).programsize)


class PatternBudget:
    """How many client patterns one structure may hold and how large their programs may be in all;
    `charge` is called for each pattern in turn, so a structure over budget is refused without
    compiling the patterns after the one that crossed it."""

    def __init__(self, max_patterns: int = MAX_PATTERNS, max_program: int = MAX_PROGRAM_TOTAL) -> None:
        self.max_patterns = max_patterns
        self.max_program = max_program
        self.patterns = 0
        self.program = 0
        self._seen: set[str] = set()

    @property
    def spent(self) -> bool:
        return self.patterns > self.max_patterns or self.program > self.max_program

    def charge(self, pattern: Any) -> str | None:
        """None when `pattern` compiles within what is left; else why not (UnsafePattern's text or
        the budget that is spent). A pattern seen before in this structure costs nothing more."""
        if isinstance(pattern, str) and pattern in self._seen:
            return None
        self.patterns += 1
        if self.patterns > self.max_patterns:
            return f"more than {self.max_patterns} patterns in one request"
        try:
            size = program_size(pattern)
        except UnsafePattern as exc:
            return str(exc)
        self._seen.add(pattern)
        self.program += size
        if self.program > self.max_program:
            return (
                f"the patterns compile to more than {self.max_program} RE2 instructions in all "
                f"(this one alone: {size}); simplify them (counted repeats of Unicode classes such as "
                "\\pL{n} are the costly kind)"
            )
        return None


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches anywhere in `text` (JSON Schema semantics), in linear time."""
    compiled = compile_pattern(pattern)
    try:
        return compiled.search(text) is not None
    except UnicodeEncodeError:  # lone surrogates (valid in JSON strings) cannot be UTF-8 for RE2
        return compiled.search(text.encode("utf-8", "replace").decode("utf-8")) is not None


# ---- JSON Schema ---------------------------------------------------------------------------------
def _pattern(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        matched = search(pattern, instance)
    except UnsafePattern as exc:
        yield ValidationError(str(exc))
        return
    if not matched:
        yield ValidationError(f"{_show(instance)} does not match {_show(pattern)}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            try:
                matched = search(pattern, key)
            except UnsafePattern as exc:
                yield ValidationError(str(exc))
                return
            if matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """As jsonschema's, with the `patternProperties` lookup done by RE2."""
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = []
    for key in instance:
        if key in properties:
            continue
        try:
            if any(search(pattern, key) for pattern in patterns):
                continue
        except UnsafePattern as exc:
            yield ValidationError(str(exc))
            return
        extras.append(key)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        names = ", ".join(repr(extra) for extra in sorted(extras)[:10])
        verb = "was" if len(extras) == 1 else "were"
        yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


FORMAT_CHECKER = FormatChecker(formats=())


@FORMAT_CHECKER.checks("regex", raises=UnsafePattern)
def _is_regex(instance: object) -> bool:
    if isinstance(instance, str):
        compile_pattern(instance)
    return True


SafeDraft202012Validator = validators.extend(
    Draft202012Validator,
    validators={
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
    format_checker=FORMAT_CHECKER,
)


def schema_validator(schema: dict[str, Any], *, checked: bool = False) -> Validator:
    """A Draft 2020-12 validator of `schema` whose regex keywords use RE2 (never Python `re`);
    raises UnsafePattern when the schema holds a pattern RE2 refuses. `checked`: the patterns were
    checked already (a ToolCatalog's schemas): the walk is skipped (0.36 s for 128 tools of 6 KB), and
    a refused pattern would still only ever fail validation, never reach Python `re`."""
    problems = [] if checked else pattern_problems(schema, "schema")
    if problems:
        raise UnsafePattern("; ".join(problems[:5]))
    validator: Validator = SafeDraft202012Validator(schema, format_checker=FORMAT_CHECKER)
    return validator


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SCHEMA_LISTS = ("items", "prefixItems", "allOf", "anyOf", "oneOf")
_SCHEMA_ONE = (
    "not", "if", "then", "else", "contains", "additionalProperties", "unevaluatedProperties",
    "propertyNames", "additionalItems", "unevaluatedItems", "contentSchema",
)  # fmt: skip


def pattern_problems(schema: Any, where: str, budget: PatternBudget | None = None) -> list[str]:
    """Every pattern in `schema` that RE2 refuses (and constructs that would need Python `re`),
    each with where it is. Walks the keywords that hold sub-schemas, iteratively; with a `budget`,
    each pattern is charged to it and the walk stops once it is spent."""
    problems: list[str] = []
    budget = budget if budget is not None else PatternBudget(max_patterns=10**9, max_program=10**12)
    uses_unevaluated = _has_keyword(schema, "unevaluatedProperties")
    stack: list[tuple[Any, str]] = [(schema, where)]
    while stack and not budget.spent:
        node, at = stack.pop()
        if not isinstance(node, dict):
            continue
        if "pattern" in node:
            problems.extend(_problem(node["pattern"], f"{at}.pattern", budget))
        for keyword in _SCHEMA_MAPS:
            children = node.get(keyword)
            if isinstance(children, dict):
                stack.extend((child, f"{at}.{keyword}.{name}") for name, child in children.items())
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict):
            problems.extend(p for key in patterns for p in _problem(key, f"{at}.patternProperties", budget))
            if uses_unevaluated:
                problems.append(f"{at}: patternProperties together with unevaluatedProperties is not supported")
        for keyword in _SCHEMA_LISTS:
            children = node.get(keyword)
            if isinstance(children, list):
                stack.extend((child, f"{at}.{keyword}[{index}]") for index, child in enumerate(children))
            elif isinstance(children, dict):
                stack.append((children, f"{at}.{keyword}"))
        stack.extend((node[keyword], f"{at}.{keyword}") for keyword in _SCHEMA_ONE if keyword in node)
    return sorted(set(problems))


def _problem(pattern: Any, where: str, budget: PatternBudget) -> list[str]:
    if budget.spent:
        return []
    problem = budget.charge(pattern)
    return [] if problem is None else [f"{where}: {problem}"]


def _has_keyword(schema: Any, keyword: str) -> bool:
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if keyword in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _show(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")

"""planner/sizing.py: the longest answer a grammar admits, from the schema's structure.

Bounded schemas are checked against the regex outlines_core itself builds from them (the engine's
own grammar): the structural count must equal that regex's longest match. Unbounded parts count
their budget; the planner and the tool-call decoder both size their calls with this module.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from planner.config import GrammarConfig
from planner.grammar import SchemaBuilder
from planner.grammar_budget import grammar_budget, max_tokens_for, worst_case_chars
from planner.sizing import FORMAT_CHARS, MIN_TOKENS, OTHER_FORMAT_CHARS, Budget, literal_chars
from planner.sizing import max_tokens_for as sized_max_tokens
from planner.sizing import worst_case_chars as sized_worst
from planner.value_grammar import ValueContext
from serving.settings import ToolCallSettings
from serving.stack import demo_catalog
from serving.toolcalls.schemas import ArgumentGrammar

BUDGET = Budget(free_string=24, number_digits=9, array_items=6)
BOOL = {"type": "boolean"}
BOUNDED: dict[str, dict[str, Any]] = {
    "empty object": {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
    "one property": {"type": "object", "properties": {"a": BOOL}, "required": ["a"], "additionalProperties": False},
    "nested": {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date"},
            "id": {"type": "string", "format": "uuid"},
            "n": {"type": "integer", "minDigits": 1, "maxDigits": 4},
            "flags": {"type": "array", "items": BOOL, "maxItems": 3},
            "none": {"type": "array", "items": BOOL, "maxItems": 0},
            "pick": {"anyOf": [{"enum": ["a", "bb", 12, None]}, {"type": "null"}]},
            "inner": {
                "type": "object",
                "properties": {"k": {"const": {"x": [1, 2], "y": {}}}, "z": {"enum": [[], [True, None]]}},
                "required": ["k", "z"],
                "additionalProperties": False,
            },
        },
        "required": ["when", "id", "n", "flags", "none", "pick", "inner"],
        "additionalProperties": False,
    },
    "array of objects": {
        "type": "array",
        "items": {"type": "object", "properties": {"ok": BOOL, "v": {"type": "null"}}, "required": ["ok", "v"]},
        "minItems": 1,
        "maxItems": 4,
    },
    "bounded string": {"type": "string", "maxLength": 7},
    "tool selection": {
        "type": "object",
        "properties": {"tools": {"type": "array", "items": {"enum": ["get_weather", "search_hotels"]}, "maxItems": 5}},
        "required": ["tools"],
        "additionalProperties": False,
    },
}


def outlines_width(schema: dict[str, Any]) -> int | None:
    """The longest match of the regex outlines_core builds for `schema` (None: unbounded). Only this
    test parses a regex (with the standard library's parser, to check the structural count)."""
    json_schema = pytest.importorskip("outlines_core.json_schema")
    import re._constants as sre_constants
    import re._parser as sre_parse

    _, high = sre_parse.parse(json_schema.build_regex_from_schema(json.dumps(schema))).getwidth()
    return None if high >= sre_constants.MAXREPEAT else int(high)


@pytest.mark.parametrize("name", list(BOUNDED))
def test_a_bounded_schema_is_sized_exactly_as_outlines_matches_it(name: str) -> None:
    schema = BOUNDED[name]
    assert sized_worst(schema, BUDGET) == outlines_width(schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string"},
        {"type": "string", "format": "time"},
        {"type": "string", "format": "date-time"},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "number"},
        {"type": "integer"},
        {"type": "array", "items": BOOL},
    ],
    ids=json.dumps,
)
def test_outlines_leaves_these_open_ended(schema: dict[str, Any]) -> None:
    assert outlines_width(schema) is None  # hence a budget, below


def test_open_ended_parts_count_their_budget() -> None:
    assert sized_worst({"type": "string"}, BUDGET) == 2 + 24
    assert sized_worst({"type": "string", "pattern": "^[A-Z]{3}$", "maxLength": 3}, BUDGET) == 2 + 24  # not parsed
    assert sized_worst({}, BUDGET) == 2 + 24  # untyped
    assert sized_worst({"type": "object", "additionalProperties": {"type": "string"}}, BUDGET) == 2 + 24
    assert sized_worst({"type": "string", "format": "time"}, BUDGET) == 2 + FORMAT_CHARS["time"]
    assert sized_worst({"type": "string", "format": "email"}, BUDGET) == 2 + OTHER_FORMAT_CHARS
    assert sized_worst({"type": "integer"}, BUDGET) == 1 + 9
    assert sized_worst({"type": "number"}, BUDGET) == 1 + 9 + (1 + 9) + (2 + 3)
    bounded_number = {"type": "number", "maxDigitsFraction": 6, "maxDigitsExponent": 2}
    assert sized_worst(bounded_number, BUDGET) == 1 + 9 + 7 + 4
    assert sized_worst({"type": "array", "items": BOOL}, BUDGET) == 4 + 6 * 5 + 2 * 5


def test_a_well_formed_time_fits_its_budget() -> None:
    assert len(json.dumps("23:59:59.999999+08:00")) <= 2 + FORMAT_CHARS["time"]
    assert len(json.dumps("2027-06-20T23:59:59.999+08:00")) <= 2 + FORMAT_CHARS["date-time"]


def test_non_ascii_literals_count_their_escapes() -> None:
    assert literal_chars("杭州") == len('"\\u676d\\u5dde"')  # a CJK character may be several tokens


def test_max_tokens_covers_the_worst_case_within_the_cap() -> None:
    schema = BOUNDED["nested"]
    worst = sized_worst(schema, BUDGET)
    assert sized_max_tokens(schema, BUDGET, 4096) == worst + 2
    assert sized_max_tokens(schema, BUDGET, 50) == 50
    assert sized_max_tokens({"type": "boolean"}, BUDGET, 4096) == MIN_TOKENS


def test_the_planner_and_the_tool_call_decoder_size_with_this_module() -> None:
    config = GrammarConfig()
    schema = SchemaBuilder(config, 6).args_schema(demo_catalog().get("search_hotels"), ValueContext("free"))
    assert worst_case_chars(schema, config) == sized_worst(schema, grammar_budget(config))
    assert max_tokens_for(schema, config, 512) == sized_max_tokens(schema, grammar_budget(config), 512)
    settings = ToolCallSettings()
    grammar = ArgumentGrammar(settings)
    decoding = grammar.arguments_schema({"type": "object", "properties": {"q": {"type": "string"}}})
    assert grammar.budget == Budget(settings.free_string_chars, settings.number_max_digits, settings.max_array_items)
    assert grammar.max_tokens(decoding) == sized_max_tokens(decoding, grammar.budget, settings.max_argument_tokens)

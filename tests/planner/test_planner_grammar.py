"""The grammars: every value the tool's JSON Schema allows is decodable, structure is enforced."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from planner.catalog import ToolCatalog, ToolDef
from planner.config import GrammarConfig
from planner.grammar import SchemaBuilder
from planner.grammar_budget import max_tokens_for, worst_case_chars
from planner.upstream import Upstream
from planner.value_grammar import ValueContext, sole_value, split_decided
from planner.values import extract
from planner.wrappers import unwrap_other
from tests.planner.helpers import demo_catalog

TODAY = date(2026, 12, 1)
EVERY_TYPE = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "window": {"type": "object", "properties": {"start": {"type": "string"}, "end": {"type": "string"}}},
        "note": {"type": "string"},
    },
    "required": ["title", "count", "ratio", "flag", "mode", "tags", "window"],
}


def tool(parameters: dict[str, Any], name: str = "do_it", output: dict[str, Any] | None = None) -> ToolDef:
    function: dict[str, Any] = {"name": name, "description": "", "parameters": parameters}
    if output is not None:
        function["output_schema"] = output
    return ToolCatalog.from_openai([{"type": "function", "function": function}]).get(name)


def accepts(schema: dict[str, Any], value: Any) -> bool:
    return Draft202012Validator(schema).is_valid(value)


def detour(value: Any, key: str = "") -> Any:
    """Every free string/number leaf (not enums, booleans, nulls) written as {"other": leaf}."""
    if isinstance(value, dict):
        return {k: detour(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [detour(v, key) for v in value]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) and key != "mode":
        return {"other": value}
    return value


GOOD = {
    "title": "Ünïcode & MiXeD case: 100% / ok?",
    "count": -42,
    "ratio": -0.125,
    "flag": False,
    "mode": "slow",
    "tags": ["a", "B c"],
    "window": {"start": "2021-03-03", "end": None},
    "note": None,
}


@pytest.mark.parametrize("grounding", ["free", "hybrid", "grounded"])
def test_every_json_schema_type_is_decodable_in_every_grounding_mode(grounding: str) -> None:
    values = extract("Plan 'Weekly sync' for 3 people at 0.5 ratio", TODAY)
    schema = SchemaBuilder(GrammarConfig(), 6).args_schema(tool(EVERY_TYPE), ValueContext(grounding, values))  # type: ignore[arg-type]
    # Grounded mode takes values outside the request's candidates through the {"other": ...} detour.
    wrapped = detour(GOOD) if grounding == "grounded" else GOOD
    assert accepts(schema, wrapped)
    assert unwrap_other(wrapped) == GOOD
    assert accepts(schema, {**wrapped, "title": "Weekly sync", "count": 3})  # request values, as they are
    assert not accepts(schema, {**wrapped, "extra": 1})  # unknown argument
    assert not accepts(schema, {k: v for k, v in wrapped.items() if k != "title"})  # missing argument
    assert not accepts(schema, {**wrapped, "mode": "medium"})  # enum kept
    assert not accepts(schema, {**wrapped, "flag": "yes"})  # type kept
    assert not accepts(schema, {**wrapped, "tags": ["x"] * 7})  # bounded array
    quoted = 'say "hi" \\ back' + "x" * 200  # quotes, backslashes, any length: written as JSON escapes
    assert accepts(
        schema, {**wrapped, "title": {"other": quoted}} if grounding == "grounded" else {**wrapped, "title": quoted}
    )


def test_grounded_mode_offers_the_request_values_first_and_free_text_only_as_a_detour() -> None:
    values = extract("Send 'Hello John' to +1 555-123-4567 on March 3, 2021", TODAY)
    parameters = {
        "type": "object",
        "properties": {"message": {"type": "string"}, "day": {"type": "string"}},
        "required": ["message", "day"],
    }
    schema = SchemaBuilder(GrammarConfig(), 6).args_schema(tool(parameters), ValueContext("grounded", values))
    assert accepts(schema, {"message": "Hello John", "day": "March 3, 2021"})
    assert accepts(schema, {"message": "Hello John", "day": "2021-03-03"})  # the year as written survives
    assert not accepts(schema, {"message": "Hello Jane", "day": "2021-03-03"})
    assert accepts(schema, {"message": {"other": "Hello Jane"}, "day": "2021-03-03"})


def test_references_whole_output_without_schema_and_typed_fields_with_one() -> None:
    plain = tool({"type": "object", "properties": {"q": {"type": "string"}}}, "search")
    typed = tool(
        {"type": "object", "properties": {"q": {"type": "string"}}},
        "quote",
        {"type": "object", "properties": {"total": {"type": "number"}, "label": {"type": "string"}}},
    )
    consumer = tool(
        {
            "type": "object",
            "properties": {"amount": {"type": "number"}, "text": {"type": "string"}},
            "required": ["amount", "text"],
        }
    )
    upstream = [Upstream("n1", plain), Upstream("n2", typed)]
    grounded = SchemaBuilder(GrammarConfig(), 6).args_schema(consumer, ValueContext("grounded", upstream=upstream))
    assert accepts(grounded, {"amount": "$n2.total", "text": "$n1"})
    assert accepts(grounded, {"amount": "$n1", "text": "$n2.label"})
    assert not accepts(grounded, {"amount": "$n2.label", "text": "x"})  # a string field for a number
    assert not accepts(grounded, {"amount": "$n3", "text": "x"})  # not upstream
    # free mode: a reference is wrapped, so that it never overlaps a free string in the grammar
    free = SchemaBuilder(GrammarConfig(), 6).args_schema(consumer, ValueContext("free", upstream=upstream))
    wrapped = {"amount": {"ref": "$n2.total"}, "text": {"ref": "$n1"}}
    assert accepts(free, wrapped) and unwrap_other(wrapped) == {"amount": "$n2.total", "text": "$n1"}
    assert accepts(free, {"amount": 3.5, "text": "$n1 as plain text"})
    assert not accepts(free, {"amount": {"ref": "$n3"}, "text": "x"})


def test_the_whole_output_is_offered_only_where_its_declared_type_fits() -> None:
    """An object output cannot be a number or a string argument; it can be an object or untyped one."""
    typed = tool(
        {"type": "object", "properties": {}},
        "quote",
        {"type": "object", "properties": {"total": {"type": "number"}, "items": {"type": "array"}}},
    )
    listing = tool({"type": "object", "properties": {}}, "names", {"type": "array", "items": {"type": "string"}})
    consumer = tool(
        {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "text": {"type": "string"},
                "people": {"type": "array", "items": {"type": "string"}},
                "payload": {"type": "object", "properties": {"a": {"type": "string"}}},
                "anything": {},
            },
            "required": ["amount", "text", "people", "payload", "anything"],
        }
    )
    assert typed.output_type == "object" and listing.output_type == "array"
    ok = {"amount": "$n1.total", "text": "x", "people": "$n2", "payload": "$n1", "anything": "$n1"}
    for grounding in ("grounded", "free"):
        context = ValueContext(grounding, upstream=[Upstream("n1", typed), Upstream("n2", listing)])  # type: ignore[arg-type]
        schema = SchemaBuilder(GrammarConfig(), 6).args_schema(consumer, context)

        def refs(args: dict[str, Any], wrap: bool = grounding == "free") -> dict[str, Any]:
            return {k: {"ref": v} if wrap and str(v).startswith("$") else v for k, v in args.items()}

        assert accepts(schema, refs(ok))
        assert accepts(schema, refs({**ok, "people": "$n1.items"}))  # a typed field still fits
        assert not accepts(schema, refs({**ok, "amount": "$n1"}))  # an object for a number
        if grounding == "free":  # (grounded mode without request values writes a free string as it is)
            assert not accepts(schema, refs({**ok, "text": "$n1"}))  # an object for a string
        assert not accepts(schema, refs({**ok, "people": "$n1"}))  # an object for a list
        assert not accepts(schema, refs({**ok, "amount": "$n2"}))  # a list for a number


def test_a_client_pattern_never_enters_the_grammar() -> None:
    parameters = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^(a|a)*$"}},
        "required": ["code"],
    }
    schema = SchemaBuilder(GrammarConfig(), 6).args_schema(tool(parameters), ValueContext("free"))
    assert "(a|a)" not in str(schema)


def test_tools_schema_can_say_no_tool_fits() -> None:
    builder = SchemaBuilder(GrammarConfig(), 4)
    catalog = demo_catalog()
    assert accepts(builder.tools_schema(catalog), {"tools": []})
    assert not accepts(builder.tools_schema(catalog, allow_empty=False), {"tools": []})
    assert not accepts(builder.tools_schema(catalog), {"tools": ["book_rocket"]})
    assert not accepts(builder.tools_schema(catalog), {"tools": ["get_weather"] * 5})


def test_every_grammar_has_a_bounded_worst_case_and_max_tokens_covers_it() -> None:
    config = GrammarConfig()
    values = extract("Plan 'Weekly sync' for 3 people", TODAY)
    for grounding in ("free", "hybrid", "grounded"):
        schema = SchemaBuilder(config, 6).args_schema(tool(EVERY_TYPE), ValueContext(grounding, values))  # type: ignore[arg-type]
        worst = worst_case_chars(schema, config)
        assert 0 < worst < 4000
        assert max_tokens_for(schema, config, 4096) >= worst + 1


def test_bare_and_one_shot_baseline_grammars() -> None:
    catalog = demo_catalog()
    bare = SchemaBuilder.bare_plan_schema(catalog, 3)
    assert accepts(bare, {"steps": [{"tool": "get_weather", "args": {"anything": 1, "else": "x"}}]})
    assert not accepts(bare, {"steps": [{"tool": "get_weather", "args": {"nested": [1, 2]}}]})  # flat scalars only
    assert not accepts(bare, {"steps": [{"tool": "nope", "args": {}}]})
    rich = SchemaBuilder(GrammarConfig(), 3).plan_schema(catalog)
    assert not accepts(rich, {"steps": [{"tool": "get_weather", "args": {"anything": 1}}]})


def closed(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    names = list(properties) if required is None else required
    return {"type": "object", "properties": properties, "additionalProperties": False, "required": names}


def test_a_schema_that_admits_one_value_is_read_without_decoding() -> None:
    one = closed({"id": {"enum": ["$n1.id"]}, "flag": {"const": True}, "gone": {"type": "null"},
                  "when": {"anyOf": [{"enum": ["2027-03-03"]}]}, "nested": closed({})})  # fmt: skip
    sole = sole_value(one)
    assert sole is not None and sole.value == {"id": "$n1.id", "flag": True, "gone": None, "when": "2027-03-03",
                                               "nested": {}}  # fmt: skip
    assert accepts(one, sole.value)
    assert sole_value(closed({"id": {"enum": ["a", "b"]}})) is None  # a choice
    assert sole_value(closed({"id": {"enum": ["a"]}}, required=[])) is None  # the model may leave it out
    assert sole_value({**closed({"id": {"enum": ["a"]}}), "additionalProperties": True}) is None
    assert sole_value({"type": "string"}) is None and sole_value({"enum": ["a"], "type": "integer"}) is None


def test_the_model_is_asked_for_the_open_arguments_only() -> None:
    schema = closed({"fixed": {"enum": [1]}, "open": {"enum": ["x", "y"]}, "id": {"enum": ["$n1.id"]},
                     "optional": {"enum": [2]}, "last": {"const": "z"}}, required=["fixed", "open", "id", "last"])  # fmt: skip
    asked, decided = split_decided(schema)
    assert list(asked["properties"]) == ["open", "optional"]  # in order; an optional one may still be left out
    assert asked["required"] == ["open"] and decided == {"fixed": 1, "id": "$n1.id", "last": "z"}
    open_only = closed({"open": {"type": "string"}})
    assert split_decided(open_only) == (open_only, {})  # nothing decided: sent whole
    everything, values = split_decided(closed({"a": {"enum": [1]}, "b": {"enum": [2]}}))
    assert everything["properties"] == {} and values == {"a": 1, "b": 2} and sole_value(everything) is not None

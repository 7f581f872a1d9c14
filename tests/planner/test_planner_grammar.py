from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from planner.config import GrammarConfig
from planner.grammar import SchemaBuilder, max_tokens_for, reference_pattern
from tests.planner.helpers import demo_catalog


def accepts(schema: dict[str, object], value: object) -> bool:
    return Draft202012Validator(schema).is_valid(value)


def test_tools_schema_allows_only_catalog_names_and_bounded_length() -> None:
    catalog = demo_catalog()
    schema = SchemaBuilder(GrammarConfig(), 4).tools_schema(catalog)
    assert accepts(schema, {"tools": ["search_flights", "get_weather"]})
    assert not accepts(schema, {"tools": ["book_rocket"]})
    assert not accepts(schema, {"tools": ["get_weather"] * 5})
    assert not accepts(schema, {"tools": []})
    assert not accepts(schema, {"tools": ["get_weather"], "extra": 1})


def test_args_schema_rules_out_unknown_and_missing_arguments() -> None:
    catalog = demo_catalog()
    schema = SchemaBuilder(GrammarConfig(), 6).args_schema(catalog.get("search_flights"), [])
    good = {"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20", "max_price": None}
    assert accepts(schema, good)
    assert not accepts(schema, {**good, "airline": "X"})  # unknown argument
    assert not accepts(schema, {k: v for k, v in good.items() if k != "origin"})  # missing required
    assert not accepts(schema, {**good, "date": "June 20"})  # pattern kept
    assert not accepts(schema, {**good, "max_price": "cheap"})  # type kept
    assert not accepts(schema, {**good, "max_price": "$n1.cheapest.price"})  # no upstream: no reference


def test_reference_enum_offers_typed_upstream_fields() -> None:
    catalog = demo_catalog()
    upstream = [catalog.get("search_flights"), catalog.get("search_hotels")]
    schema = SchemaBuilder(GrammarConfig(), 6).args_schema(catalog.get("check_budget"), upstream)
    assert accepts(schema, {"amounts": ["$n1.cheapest.price", "$n2.best.price_per_night", 100], "limit": 5000})
    assert not accepts(schema, {"amounts": ["$n1.cheapest.airline"], "limit": 5000})  # string field for a number
    assert not accepts(schema, {"amounts": ["$n3.total"], "limit": 5000})  # not upstream
    assert not accepts(schema, {"amounts": [1] * 7, "limit": 1})  # bounded array


def test_reference_pattern_mode_and_menu_enum() -> None:
    catalog = demo_catalog()
    config = GrammarConfig(reference_mode="pattern")
    schema = SchemaBuilder(config, 6).args_schema(catalog.get("quote_catering"), [catalog.get("search_venues")])
    assert accepts(schema, {"venue_id": "$n1.best.venue_id", "guests": "$n1.best.capacity", "menu": "premium"})
    assert not accepts(schema, {"venue_id": "V1", "guests": "$n2.x", "menu": None})
    assert not accepts(schema, {"venue_id": "V1", "guests": 3, "menu": "sushi"})


@pytest.mark.parametrize(("count", "ok", "bad"), [(1, "$n1.a", "$n2.a"), (3, "$n3.b.c", "$n4"), (12, "$n12", "$n13")])
def test_reference_pattern(count: int, ok: str, bad: str) -> None:
    schema = {"type": "string", "pattern": reference_pattern(count)}
    assert accepts(schema, ok) and not accepts(schema, bad)


def test_optional_modes() -> None:
    tool = demo_catalog().get("search_hotels")
    omit = SchemaBuilder(GrammarConfig(optional_args="omit"), 6).args_schema(tool, [])
    assert list(omit["properties"]) == ["city", "check_in", "check_out"]
    optional = SchemaBuilder(GrammarConfig(optional_args="optional"), 6).args_schema(tool, [])
    assert optional["required"] == ["city", "check_in", "check_out"] and "near" in optional["properties"]


def test_one_shot_plan_schema_rejects_unknown_tool_and_argument() -> None:
    schema = SchemaBuilder(GrammarConfig(), 3).plan_schema(demo_catalog())
    step = {"tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}}
    assert accepts(schema, {"steps": [step]})
    assert not accepts(schema, {"steps": [{**step, "tool": "teleport"}]})
    assert not accepts(schema, {"steps": [{**step, "args": {**step["args"], "unit": "C"}}]})
    assert not accepts(schema, {"steps": [step] * 4})


def test_schemas_are_deterministic_and_max_tokens_bounded() -> None:
    catalog = demo_catalog()
    builder = SchemaBuilder(GrammarConfig(), 6)
    a = json.dumps(builder.args_schema(catalog.get("search_hotels"), [catalog.get("search_flights")]))
    b = json.dumps(builder.args_schema(catalog.get("search_hotels"), [catalog.get("search_flights")]))
    assert a == b
    assert 8 <= max_tokens_for(json.loads(a), GrammarConfig(), 512) <= 512
    assert max_tokens_for(builder.plan_schema(catalog), GrammarConfig(), 300) == 300

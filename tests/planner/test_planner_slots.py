"""Intent-derived value enums and bounded grammars (planner/slots.py, planner/grammar.py)."""

from __future__ import annotations

import json
import re
from datetime import date

from planner.config import PlannerConfig
from planner.demos import Demonstration, choose_skeleton, skeleton_refs
from planner.fallback import FallbackRules
from planner.grammar import SchemaBuilder, pattern_width, worst_case_chars
from planner.intent import IntentExtractor
from planner.slots import SlotKinds, SlotValues, extract_values
from tests.planner.helpers import demo_catalog

CONFIG = PlannerConfig(today=date(2026, 11, 30))


def values(request: str) -> SlotValues:
    rules = FallbackRules.from_yaml(CONFIG.fallback_rules_path)
    intent = IntentExtractor(rules.goals, rules.cities, CONFIG.effective_today()).extract(request)
    return extract_values(request, intent, SlotKinds.from_yaml(CONFIG.slots_path))


def test_values_by_kind_from_the_request() -> None:
    found = values("Find flights from Shanghai to Chengdu on January 18 and a hotel near Chunxi Road for 5 nights.")
    assert found.by_kind["city"] == ["Shanghai", "Chengdu"]
    assert found.by_kind["date"] == ["2027-01-18", "2027-01-23"]  # check-out computed from the nights
    assert found.by_kind["end_date"] == ["2027-01-23"]
    assert found.by_kind["place"] == ["Chunxi Road"]
    assert found.numbers() == [5]  # "18" belongs to the date
    other = values("Search for a rental car in San Diego from 10/05/2023 10:00 AM, budget 1,200 USD.")
    assert "San Diego" in other.by_kind["text"] and "10/05/2023" in other.by_kind["date"]
    assert other.by_kind["time"] == ["10:00 AM"] and 1200 in other.numbers()


def test_arguments_choose_among_request_values_and_free_strings_are_bounded() -> None:
    catalog = demo_catalog()
    builder = SchemaBuilder(CONFIG.grammar, 6)
    found = values("Find a hotel in Xiamen for 4 nights starting 2027-06-06, and the weather there.")
    hotel = builder.args_schema(catalog.get("search_hotels"), [], found)["properties"]
    assert hotel["city"] == {"enum": ["Xiamen"]}
    assert hotel["check_in"] == {"enum": ["2027-06-06", "2027-06-10"]}
    assert hotel["check_out"] == {"enum": ["2027-06-10"]}  # never the check-in day
    assert hotel["near"] == {"type": "null"}  # optional, nothing in the request: only null
    assert hotel["max_price_per_night"] == {"anyOf": [{"enum": [4]}, {"type": "null"}]}
    knowledge = builder.args_schema(catalog.get("lookup_knowledge"), [], found)["properties"]
    free = knowledge["query"]["anyOf"][-1]
    assert free["type"] == "string" and pattern_width(free["pattern"]) == 32 and "maxLength" not in free


def test_staged_schemas_of_the_demo_catalog_have_a_small_finite_worst_case() -> None:
    catalog = demo_catalog()
    builder = SchemaBuilder(CONFIG.grammar, 6)
    upstream = [catalog.get("search_flights"), catalog.get("search_hotels")]
    for tool in catalog:
        for found in (None, values("Plan a trip from Shanghai to Hangzhou on June 20 under 2000 CNY.")):
            schema = builder.args_schema(tool, upstream, found)
            text = json.dumps(schema)
            assert '"type": "number"' not in text and "maxLength" not in text  # every value bounded
            assert worst_case_chars(schema, CONFIG.grammar) <= 400


def test_pattern_width() -> None:
    assert pattern_width(r"^\d{4}-\d{2}-\d{2}$") == 10
    assert pattern_width(r"^[A-Z]+$") is None
    assert re.fullmatch(CONFIG.grammar.free_string_pattern.strip("^$"), "West Lake, Hangzhou")


def test_skeleton_choice_and_its_references() -> None:
    flights_hotel = {
        "nodes": [
            {"id": "n1", "tool": "search_flights", "args": {}},
            {"id": "n2", "tool": "check_budget", "args": {"amounts": ["$n1.cheapest.price"], "limit": 1}},
        ]
    }
    near = Demonstration("a", flights_hotel, 0.3)
    far = Demonstration("b", {"nodes": [{"id": "n1", "tool": "get_weather", "args": {}}]}, 0.2)
    assert choose_skeleton([far, near], {"search_flights", "check_budget"}, min_score=0.9, agree_score=0.1) is near
    assert choose_skeleton([near, far], {"get_weather"}, min_score=0.9, agree_score=0.25) is None
    assert choose_skeleton([near, far], set(), min_score=0.3, agree_score=0.1) is near
    assert skeleton_refs(near) == [{}, {"amounts": ["$n1.cheapest.price"]}]

"""Domain packs apply only to catalogs holding their tools; their rules bind to tools, never to names."""

from __future__ import annotations

from datetime import date

import pytest

from planner.catalog import ToolCatalog
from planner.packs import DomainPack, known_packs, load_packs, register_pack
from planner.rules import BusinessRules
from planner.validation import PlanValidator
from tests.planner.helpers import demo_catalog, node, plan

TODAY = date(2026, 11, 30)


@pytest.fixture(scope="module")
def travel() -> DomainPack:
    return load_packs(["travel"])[0]


def test_the_travel_pack_applies_only_to_its_own_tools(travel: DomainPack) -> None:
    assert travel.applies(demo_catalog()) and travel.tools_in(demo_catalog()) == set(demo_catalog().names())
    lookalike = ToolCatalog.from_openai(
        [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {"where": {"type": "string"}}},
                },
            }
        ]
    )
    assert not travel.applies(lookalike)  # same name, other arguments: a user's own tool


def test_travel_values_intent_and_fallback(travel: DomainPack) -> None:
    request = "Find a venue in Hangzhou for 50 people on 2027-06-20 with vegetarian catering, budget 30000 CNY."
    assert travel.intent(request, TODAY)["guests"] == 50
    flights = demo_catalog().get("search_flights")
    offered = travel.preferred_values("Flights Shanghai to Hangzhou on June 20", flights, TODAY)
    assert "2027-06-20" in offered["date"] and "Shanghai" in offered["origin"]
    result = travel.fallback_plan(request, demo_catalog(), TODAY)
    assert result is not None and [n.tool for n in result.nodes] == ["search_venues", "quote_catering", "check_budget"]
    assert result.node("n2").args["venue_id"] == "$n1.best.venue_id"
    validator = PlanValidator(demo_catalog(), BusinessRules(travel.business_rules(), TODAY), max_nodes=6)
    assert validator.validate(result).ok
    assert travel.fallback_plan("Sing me a song", demo_catalog(), TODAY) is None


def test_rules_bind_to_tools_not_to_argument_names(travel: DomainPack) -> None:
    rules = BusinessRules(travel.business_rules(), TODAY)
    past = plan(node("n1", "get_weather", {"city": "Hangzhou", "date": "2020-01-01"}))
    assert [i.code for i in rules.check(past)] == ["date_in_past"]
    mine = plan(node("n1", "book_room", {"date": "1/2/2023", "check_in": "x"}))
    assert rules.check(mine) == []
    with pytest.raises(ValueError, match="name no tool"):
        BusinessRules([{"kind": "not_in_past", "args": ["date"]}], TODAY)


def test_packs_load_by_name_from_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner import packs

    monkeypatch.setattr(packs, "_REGISTRY", dict(packs._REGISTRY))
    register_pack("travel-again", "planner.packs.travel:TravelPack")
    assert {"travel", "travel-again"} <= set(known_packs())
    assert [p.name for p in load_packs(["travel-again"])] == ["travel"]
    with pytest.raises(ValueError, match="unknown domain pack"):
        load_packs(["no-such-pack"])

"""The demo tools of docs/demo-catalog.md: names, arguments and output fields, on the shipped data."""

from __future__ import annotations

from typing import Any

import pytest
from exec_helpers import plan_of, run

from executors.errors import ToolArgumentError, ToolDataNotFound
from executors.registry import ToolRegistry
from executors.scheduler import DagScheduler
from executors.tools import KeywordKnowledge, Passage, default_registry, load_demo_data

CATALOG = {
    "search_flights": ({"origin", "destination", "date"}, {"max_price"}, {"flights", "cheapest", "count"}),
    "search_hotels": (
        {"city", "check_in", "check_out"},
        {"max_price_per_night", "near", "family_friendly"},
        {"hotels", "best", "count"},
    ),
    "get_weather": (
        {"city", "date"},
        set(),
        {"city", "date", "condition", "temp_high_c", "temp_low_c", "precipitation_mm"},
    ),
    "search_venues": ({"city", "date", "capacity"}, {"max_price"}, {"venues", "best", "count"}),
    "quote_catering": (
        {"venue_id", "guests"},
        {"menu"},
        {"quote_id", "venue_id", "guests", "menu", "per_person", "total"},
    ),
    "check_budget": ({"amounts", "limit"}, set(), {"total", "limit", "within_budget", "remaining"}),
    "convert_currency": ({"amount", "from_currency", "to_currency"}, set(), {"amount", "currency", "rate"}),
    "lookup_knowledge": ({"query"}, {"domain"}, {"passages", "top"}),
    "review_result": ({"subject", "checklist"}, set(), {"passed", "failures", "checked"}),
}


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    return default_registry()


def call(registry: ToolRegistry, name: str, **args: Any) -> Any:
    spec = registry.get(name)
    return run(spec.invoke(spec.validate_args(args)))


def test_catalog_matches_the_contract(registry: ToolRegistry) -> None:
    assert set(registry.names()) == set(CATALOG)
    for name, (required, optional, outputs) in CATALOG.items():
        spec = registry.get(name)
        schema = spec.args_schema
        assert set(schema.get("required", [])) == required, name
        assert set(schema["properties"]) == required | optional, name
        assert set(spec.output_schema["properties"]) == outputs, name
        assert spec.description and spec.version
    assert registry.get("quote_catering").args_schema["properties"]["menu"]["enum"] == [
        "standard",
        "vegetarian",
        "premium",
    ]
    domain = registry.get("lookup_knowledge").args_schema["properties"]["domain"]
    assert domain["anyOf"][0]["enum"] == ["travel", "venues", "catering", "contracts"]


def test_search_flights(registry: ToolRegistry) -> None:
    out = call(registry, "search_flights", origin="Beijing", destination="Hangzhou", date="2026-06-12")
    ids = [f["flight_id"] for f in out["flights"]]
    assert {"CA1702", "MU5130", "HU7181"} <= set(ids)  # the shipped flights of that day, plus the timetable's
    assert out["count"] == len(ids) >= 5 and len(set(ids)) == len(ids)
    assert [f["depart"] for f in out["flights"]] == sorted(f["depart"] for f in out["flights"])
    assert out["cheapest"]["price"] == min(f["price"] for f in out["flights"])
    assert next(f for f in out["flights"] if f["flight_id"] == "MU5130") == {
        "flight_id": "MU5130",
        "airline": "China Eastern",
        "origin": "Beijing",
        "destination": "Hangzhou",
        "depart": "2026-06-12T12:15",
        "arrive": "2026-06-12T14:30",
        "price": 960.0,
    }
    capped = call(
        registry, "search_flights", origin="beijing", destination="HANGZHOU", date="2026-06-12", max_price=1000
    )
    assert 1 <= capped["count"] < out["count"] and all(f["price"] <= 1000 for f in capped["flights"])
    other_day = call(registry, "search_flights", origin="Beijing", destination="Hangzhou", date="2026-06-01")
    assert 2 <= other_day["count"] <= 6 and other_day["cheapest"] is not None
    none = call(registry, "search_flights", origin="Beijing", destination="Atlantis", date="2026-06-01")
    assert none == {"flights": [], "cheapest": None, "count": 0}


def test_search_hotels(registry: ToolRegistry) -> None:
    out = call(
        registry,
        "search_hotels",
        city="Hangzhou",
        check_in="2026-06-12",
        check_out="2026-06-15",
        near="West Lake",
        family_friendly=True,
    )
    assert all(h["family_friendly"] for h in out["hotels"])
    # hotels near West Lake first (best rated first among them), then the others
    assert [h["hotel_id"] for h in out["hotels"][:3]] == ["H-HZ-01", "H-HZ-02", "H-HZ-04"]
    assert all(h["area"] != "West Lake" for h in out["hotels"][3:]) and out["count"] > 3
    assert out["best"] == out["hotels"][0]
    cheap = call(
        registry,
        "search_hotels",
        city="Hangzhou",
        check_in="2026-06-12",
        check_out="2026-06-15",
        max_price_per_night=600,
    )
    assert "H-HZ-05" in [h["hotel_id"] for h in cheap["hotels"]]
    assert all(h["price_per_night"] <= 600 for h in cheap["hotels"])
    none = call(registry, "search_hotels", city="Atlantis", check_in="2026-06-12", check_out="2026-06-13")
    assert none == {"hotels": [], "best": None, "count": 0}
    with pytest.raises(ToolArgumentError, match="must be after check_in"):
        call(registry, "search_hotels", city="Hangzhou", check_in="2026-06-15", check_out="2026-06-12")


def test_get_weather(registry: ToolRegistry) -> None:
    out = call(registry, "get_weather", city="Hangzhou", date="2026-06-13")
    assert out["city"] == "Hangzhou" and out["date"] == "2026-06-13" and isinstance(out["temp_high_c"], float)
    assert call(registry, "get_weather", city="xi'an", date="2026-06-01")["city"] == "Xi'an"
    july = call(registry, "get_weather", city="hangzhou", date="2026-07-13")  # from the monthly normals
    assert july["city"] == "Hangzhou" and july["temp_low_c"] < july["temp_high_c"]
    with pytest.raises(ToolDataNotFound, match="Atlantis"):
        call(registry, "get_weather", city="Atlantis", date="2026-06-13")
    with pytest.raises(ToolArgumentError):
        registry.get("get_weather").validate_args({"city": "Hangzhou", "date": "13/06/2026"})


def test_venues_and_catering(registry: ToolRegistry) -> None:
    out = call(registry, "search_venues", city="Hangzhou", date="2026-06-20", capacity=100)
    ids = [v["venue_id"] for v in out["venues"]]
    assert out["best"]["venue_id"] == "V-HZ-04" and "V-HZ-01" not in ids  # V-HZ-01 is booked that day
    assert "V-HZ-02" in ids and all(v["capacity"] >= 100 for v in out["venues"])
    assert [v["price"] for v in out["venues"]] == sorted(v["price"] for v in out["venues"])
    assert call(registry, "search_venues", city="Hangzhou", date="2026-06-20", capacity=5000)["best"] is None
    quote = call(registry, "quote_catering", venue_id="V-HZ-01", guests=80, menu="vegetarian")
    assert quote["per_person"] == 156.0 and quote["total"] == 12480.0 and quote["menu"] == "vegetarian"
    assert quote == call(registry, "quote_catering", venue_id="V-HZ-01", guests=80, menu="vegetarian")
    assert call(registry, "quote_catering", venue_id="V-HZ-01", guests=10)["menu"] == "standard"
    with pytest.raises(ToolDataNotFound):
        call(registry, "quote_catering", venue_id="V-NOPE", guests=10)


def test_finance(registry: ToolRegistry) -> None:
    assert call(registry, "check_budget", amounts=[960, 2280.5], limit=3000) == {
        "total": 3240.5,
        "limit": 3000.0,
        "within_budget": False,
        "remaining": -240.5,
    }
    assert call(registry, "convert_currency", amount=100, from_currency="usd", to_currency="CNY") == {
        "amount": 720.0,
        "currency": "CNY",
        "rate": 7.2,
    }
    assert call(registry, "convert_currency", amount=720, from_currency="CNY", to_currency="USD")["amount"] == 100.0
    with pytest.raises(ToolDataNotFound):
        call(registry, "convert_currency", amount=1, from_currency="CNY", to_currency="XYZ")


def test_lookup_knowledge(registry: ToolRegistry) -> None:
    out = call(registry, "lookup_knowledge", query="cancellation terms of the venue contract", domain="contracts")
    assert out["passages"][0]["source"] == "contracts/cancellation.md" and out["top"] == out["passages"][0]["text"]
    assert all(0 < p["score"] <= 1 for p in out["passages"])
    assert call(registry, "lookup_knowledge", query="zzz qqq") == {"passages": [], "top": ""}


def test_knowledge_is_injectable() -> None:
    class Fixed:
        def search(
            self, query: str, *, k: int = 5, domain: str | None = None, tenant: str | None = None
        ) -> list[Passage]:
            return [Passage(text=f"about {query}", source="faiss/doc-1", score=0.9)]

    out = call(default_registry(knowledge=Fixed()), "lookup_knowledge", query="visa")
    assert out == {"passages": [{"text": "about visa", "source": "faiss/doc-1", "score": 0.9}], "top": "about visa"}
    keyword = KeywordKnowledge(load_demo_data().knowledge)
    assert keyword.search("west lake family hotels", domain="travel")[0].source == "travel/hangzhou-west-lake.md"


def test_review_result(registry: ToolRegistry) -> None:
    trip = {
        "flight": {"flight_id": "MU5130", "price": 960},
        "hotel": {"hotel_id": "H-HZ-01", "price_per_night": 880},
        "budget": {"within_budget": False},
    }
    out = call(registry, "review_result", subject=trip, checklist="trip")
    assert out == {"passed": False, "failures": ["within budget"], "checked": 4}
    event = {"venue": {"venue_id": "V-HZ-01", "capacity": 120}, "guests": 150}
    assert call(registry, "review_result", subject=event, checklist="event")["failures"] == [
        "venue capacity covers the guests"
    ]
    contract = {"passages": [{"text": "free cancellation up to 30 days; payment: deposit 30%; liability capped"}]}
    assert call(registry, "review_result", subject=contract, checklist="contract")["passed"] is True
    nothing = call(registry, "review_result", subject=42, checklist="trip")
    assert nothing["passed"] is False and nothing["checked"] == 0


def test_demo_trip_plan_end_to_end(registry: ToolRegistry) -> None:
    plan = plan_of(
        {
            "id": "n1",
            "tool": "search_flights",
            "args": {"origin": "Beijing", "destination": "Hangzhou", "date": "2026-06-12"},
            "success_condition": "count > `0`",
        },
        {
            "id": "n2",
            "tool": "search_hotels",
            "args": {
                "city": "Hangzhou",
                "check_in": "2026-06-12",
                "check_out": "2026-06-15",
                "near": "West Lake",
                "family_friendly": True,
            },
        },
        {"id": "n3", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2026-06-12"}},
        {
            "id": "n4",
            "tool": "check_budget",
            "args": {"amounts": ["$n1.cheapest.price", "$n2.best.price_per_night"], "limit": 6000},
        },
        {
            "id": "n5",
            "tool": "review_result",
            "args": {"subject": {"flight": "$n1.cheapest", "hotel": "$n2.best", "budget": "$n4"}, "checklist": "trip"},
            "success_condition": "passed",
        },
    )
    outcome = run(DagScheduler(registry).run_plan(plan))
    assert outcome.ok, outcome.lost
    flight, hotel = outcome.results["n1"].output, outcome.results["n2"].output
    assert isinstance(flight, dict) and isinstance(hotel, dict) and hotel["best"]["hotel_id"] == "H-HZ-01"
    total = flight["cheapest"]["price"] + 880.0
    assert outcome.results["n4"].output == {
        "total": total,
        "limit": 6000.0,
        "within_budget": True,
        "remaining": 6000.0 - total,
    }
    assert outcome.results["n5"].output == {"passed": True, "failures": [], "checked": 4}

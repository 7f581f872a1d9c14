"""The generated demo timetables (executors/tools/timetable.py): every city of cities.json and any
date give stable, sensible flights, hotels, venues and weather; unknown cities give empty answers."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from exec_helpers import plan_of, run

from executors.errors import ToolDataNotFound
from executors.registry import ToolRegistry
from executors.scheduler import DagScheduler
from executors.tools import default_registry, load_demo_data
from executors.tools.timetable import Timetable, near_matches, stable_unit

DATES = ("2026-01-15", "2026-08-03", "2027-04-30", "2027-12-31", "2028-02-29")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    return default_registry()


@pytest.fixture(scope="module")
def timetable() -> Timetable:
    return Timetable.from_json(load_demo_data().cities)


def call(registry: ToolRegistry, name: str, **args: Any) -> Any:
    spec = registry.get(name)
    return run(spec.invoke(spec.validate_args(args)))


def sample_calls(registry: ToolRegistry) -> list[Any]:
    return [
        call(registry, "search_flights", origin="Suzhou", destination="Kunming", date="2027-09-23"),
        call(registry, "search_hotels", city="Xiamen", check_in="2027-06-06", check_out="2027-06-10", near="Gulangyu"),
        call(registry, "get_weather", city="Qingdao", date="2027-03-02"),
        call(registry, "search_venues", city="Tianjin", date="2027-10-17", capacity=120),
        call(registry, "quote_catering", venue_id="V-TSN-03", guests=120, menu="premium"),
    ]


def test_same_inputs_give_the_same_outputs_across_registries(registry: ToolRegistry) -> None:
    assert sample_calls(registry) == sample_calls(default_registry())


def test_outputs_do_not_depend_on_the_process_hash_seed(registry: ToolRegistry) -> None:
    script = (
        "import json, asyncio\n"
        "from executors.tools import default_registry\n"
        "spec = default_registry().get('search_flights')\n"
        "args = spec.validate_args({'origin': 'Suzhou', 'destination': 'Kunming', 'date': '2027-09-23'})\n"
        "print(json.dumps(asyncio.run(spec.invoke(args))))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    expected = call(registry, "search_flights", origin="Suzhou", destination="Kunming", date="2027-09-23")
    assert json.loads(done.stdout) == expected
    assert stable_unit("a", 1) == stable_unit("a", 1) != stable_unit("a", 2)


def test_every_pair_of_known_cities_has_two_to_six_generated_flights(timetable: Timetable) -> None:
    day = dt.date(2027, 5, 5)
    for origin in timetable.cities:
        for destination in timetable.cities:
            if origin is destination:
                continue
            flights = timetable.flights(origin, destination, day)
            assert 2 <= len(flights) <= 6, (origin.name, destination.name)
            assert len({f["flight_id"] for f in flights}) == len(flights)
            assert all(f["arrive"] > f["depart"] >= "2027-05-05T06:30" and f["price"] >= 200 for f in flights)


def test_the_timetable_repeats_weekly_and_fares_follow_the_date(timetable: Timetable) -> None:
    shanghai, chengdu = timetable.city("Shanghai"), timetable.city("chengdu")
    assert shanghai is not None and chengdu is not None
    monday, next_monday = dt.date(2027, 3, 1), dt.date(2027, 3, 8)
    this_week, next_week = (
        timetable.flights(shanghai, chengdu, monday),
        timetable.flights(shanghai, chengdu, next_monday),
    )
    assert [(f["flight_id"], f["depart"][11:]) for f in this_week] == [
        (f["flight_id"], f["depart"][11:]) for f in next_week
    ]
    assert [f["price"] for f in this_week] != [f["price"] for f in next_week]
    back = timetable.flights(chengdu, shanghai, monday)
    assert {f["origin"] for f in back} == {"Chengdu"} and back != this_week
    international = timetable.flights(shanghai, timetable.city("Tokyo") or shanghai, monday)
    assert {f["airline"] for f in international} <= {
        "Air China",
        "China Eastern",
        "China Southern",
        "Hainan Airlines",
        "Japan Airlines",
        "All Nippon Airways",
    }


@pytest.mark.parametrize("date", ["2026-03-10", "2027-08-21"])
def test_every_known_city_answers_every_tool(registry: ToolRegistry, timetable: Timetable, date: str) -> None:
    names = timetable.names()
    for index, city in enumerate(names):
        other = names[(index + 1) % len(names)]
        for origin, destination in ((city, other), (other, city)):
            flights = call(registry, "search_flights", origin=origin, destination=destination, date=date)
            assert flights["count"] >= 2 and flights["cheapest"]["origin"] == origin, (origin, destination)
        check_out = (dt.date.fromisoformat(date) + dt.timedelta(days=3)).isoformat()
        hotels = call(registry, "search_hotels", city=city, check_in=date, check_out=check_out)
        assert hotels["count"] >= 5 and all(h["city"] == city for h in hotels["hotels"]), city
        family = call(registry, "search_hotels", city=city, check_in=date, check_out=check_out, family_friendly=True)
        assert family["count"] >= 1, city
        venues = call(registry, "search_venues", city=city, date=date, capacity=20)
        assert venues["count"] >= 2 and all(20 <= v["capacity"] <= 800 for v in venues["venues"]), city
        for venue in venues["venues"]:  # every id search_venues returns can be quoted
            quote = call(registry, "quote_catering", venue_id=venue["venue_id"], guests=20)
            assert quote["venue_id"] == venue["venue_id"] and quote["total"] > 0


def test_weather_for_any_date_follows_the_monthly_normals(registry: ToolRegistry, timetable: Timetable) -> None:
    for city in timetable.cities:
        for date in DATES:
            out = call(registry, "get_weather", city=city.name, date=date)
            month = int(date[5:7]) - 1
            assert out["city"] == city.name and out["date"] == date and out["condition"]
            assert abs(out["temp_high_c"] - city.climate.high_c[month]) <= 3
            assert out["temp_low_c"] < out["temp_high_c"] and out["precipitation_mm"] >= 0
    kunming = timetable.city("Kunming")
    assert kunming is not None
    july = [timetable.weather(kunming, dt.date(2027, 7, d)) for d in range(1, 32)]
    january = [timetable.weather(kunming, dt.date(2027, 1, d)) for d in range(1, 32)]
    assert sum(w["precipitation_mm"] for w in july) > 3 * sum(w["precipitation_mm"] for w in january)
    # the shipped June 2026 table still wins where it has the day
    assert call(registry, "get_weather", city="Beijing", date="2026-06-01")["condition"] == "thunderstorms"


def test_near_ranks_matching_hotels_first(registry: ToolRegistry) -> None:
    for near in ("Gulangyu", "gulangyu island", "Sunlight Rock"):  # area, a longer name, a landmark
        out = call(registry, "search_hotels", city="Xiamen", check_in="2027-06-06", check_out="2027-06-10", near=near)
        areas = [h["area"] for h in out["hotels"]]
        assert areas[0] == "Gulangyu" and out["best"] == out["hotels"][0], near
        assert areas == sorted(areas, key=lambda area: area != "Gulangyu"), near
        assert len(set(areas)) > 1  # the others follow, they are not filtered out
    chengdu = call(
        registry, "search_hotels", city="Chengdu", check_in="2027-01-18", check_out="2027-01-23", near="chunxi road"
    )
    assert chengdu["best"]["area"] == "Chunxi Road"
    assert near_matches("The Bund", ["Bund"]) and near_matches("bund", ["The Bund"]) and not near_matches("", ["x"])


def test_unknown_cities_give_empty_answers_or_not_found(registry: ToolRegistry) -> None:
    none = call(registry, "search_flights", origin="Atlantis", destination="Shanghai", date="2027-01-01")
    assert none == {"flights": [], "cheapest": None, "count": 0}
    assert call(registry, "search_flights", origin="Shanghai", destination="shanghai", date="2027-01-01")["count"] == 0
    assert call(registry, "search_hotels", city="Atlantis", check_in="2027-01-01", check_out="2027-01-02")["count"] == 0
    assert call(registry, "search_venues", city="Atlantis", date="2027-01-01", capacity=10)["best"] is None
    with pytest.raises(ToolDataNotFound, match="no weather data for Atlantis"):
        call(registry, "get_weather", city="Atlantis", date="2027-01-01")
    plan = plan_of({"id": "n1", "tool": "get_weather", "args": {"city": "Atlantis", "date": "2027-01-01"}})
    result = run(DagScheduler(registry).run_plan(plan)).results["n1"]
    assert result.status == "failed" and result.error is not None
    assert (
        result.error["type"] == "not_found" and result.error["retryable"] is False and "Suzhou" in result.error["error"]
    )


def test_generated_venue_ids_encode_city_and_tier(registry: ToolRegistry, timetable: Timetable) -> None:
    generated = timetable.venues(load_demo_data().venues)
    codes = {city.code: city.name for city in timetable.cities}
    for venue in generated:
        match = re.fullmatch(r"V-([A-Z]{3})-0([1-5])", venue["venue_id"])
        assert match is not None and codes[match.group(1)] == venue["city"]
    out = call(registry, "search_venues", city="Suzhou", date="2027-05-15", capacity=200)
    assert out["count"] >= 1 and out["best"]["venue_id"].startswith("V-SZV-")
    quote = call(registry, "quote_catering", venue_id=out["best"]["venue_id"].lower(), guests=200, menu="vegetarian")
    assert quote["venue_id"] == out["best"]["venue_id"] and quote["total"] == round(quote["per_person"] * 200, 2)
    assert call(registry, "search_venues", city="Suzhou", date="2027-05-15", capacity=801)["venues"] == []

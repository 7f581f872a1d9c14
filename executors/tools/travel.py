"""Travel tools: `search_flights`, `search_hotels`, `get_weather` (docs/demo-catalog.md).

Answers come from the shipped tables plus the deterministic timetables of `timetable.py`: every
pair of cities of `cities.json` has 2-6 flights on any date (the shipped flights of that day are
added), every such city has hotels, and its weather on any date is the monthly normal with a small
daily variation (the shipped June 2026 table wins where it has the day).

A search with no match (an unknown city, a price cap below every fare) returns `count: 0`, an empty
list and `cheapest`/`best` null; it does not fail (a plan can test `count > \\`0\\`` in a
success_condition). `get_weather` for an unknown city fails with `not_found`, like every tool asked
about something its data lacks.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from executors.errors import ToolArgumentError, ToolDataNotFound
from executors.registry import ToolRegistry
from executors.tools.data import City, DemoData, IsoDate, city_key, parse_date
from executors.tools.timetable import Timetable, near_matches


class Flight(BaseModel):
    flight_id: str
    airline: str
    origin: str
    destination: str
    depart: str = Field(description="Local departure time, YYYY-MM-DDTHH:MM.")
    arrive: str = Field(description="Local arrival time, YYYY-MM-DDTHH:MM.")
    price: float = Field(description="One-way economy fare in CNY.")


class FlightSearch(BaseModel):
    flights: list[Flight] = Field(description="Matching flights, earliest departure first.")
    cheapest: Flight | None = Field(description="The cheapest match; null when there is none.")
    count: int


class Hotel(BaseModel):
    hotel_id: str
    name: str
    city: str
    area: str
    price_per_night: float = Field(description="CNY per night.")
    rating: float = Field(description="Guest rating, 0–5.")
    family_friendly: bool


class HotelSearch(BaseModel):
    hotels: list[Hotel] = Field(
        description="Matches: those near the requested place first, then best rated, then cheapest."
    )
    best: Hotel | None = Field(description="The first of `hotels`; null when there is none.")
    count: int


class Weather(BaseModel):
    city: str
    date: str
    condition: str
    temp_high_c: float
    temp_low_c: float
    precipitation_mm: float


def register_travel(registry: ToolRegistry, data: DemoData) -> None:
    timetable = Timetable.from_json(data.cities)
    hotels = data.hotels + timetable.hotels(data.hotels)

    @registry.tool(version="2", timeout_s=10, retries=3, concurrency_class="travel")
    def search_flights(
        origin: Annotated[City, Field(description="Departure city.")],
        destination: Annotated[City, Field(description="Arrival city.")],
        date: Annotated[IsoDate, Field(description="Departure date, YYYY-MM-DD.")],
        max_price: Annotated[float | None, Field(gt=0, description="Highest fare in CNY.")] = None,
    ) -> FlightSearch:
        """Search one-way flights between two cities on a date; returns the matches and the cheapest."""
        day = parse_date(date)
        origin_key, destination_key = city_key(origin), city_key(destination)
        rows = [
            row
            for row in data.flights
            if city_key(row["origin"]) == origin_key
            and city_key(row["destination"]) == destination_key
            and row["date"] == date
        ]
        source, target = timetable.city(origin), timetable.city(destination)
        if source is not None and target is not None:
            shipped = {row["flight_id"] for row in rows}
            rows += [row for row in timetable.flights(source, target, day) if row["flight_id"] not in shipped]
        matches = [
            Flight(**{k: v for k, v in row.items() if k in Flight.model_fields})
            for row in rows
            if max_price is None or row["price"] <= max_price
        ]
        matches.sort(key=lambda f: (f.depart, f.flight_id))
        cheapest = min(matches, key=lambda f: (f.price, f.depart), default=None)
        return FlightSearch(flights=matches, cheapest=cheapest, count=len(matches))

    @registry.tool(version="2", timeout_s=10, retries=3, concurrency_class="travel")
    def search_hotels(
        city: Annotated[City, Field(description="City to stay in.")],
        check_in: Annotated[IsoDate, Field(description="Check-in date, YYYY-MM-DD.")],
        check_out: Annotated[IsoDate, Field(description="Check-out date, YYYY-MM-DD (after check-in).")],
        max_price_per_night: Annotated[float | None, Field(gt=0, description="Highest nightly rate in CNY.")] = None,
        near: Annotated[str | None, Field(max_length=64, description='Area or landmark, e.g. "West Lake".')] = None,
        family_friendly: Annotated[bool | None, Field(description="Only family-friendly hotels when true.")] = None,
    ) -> HotelSearch:
        """Search hotels in a city for a stay: near a landmark first; optionally under a price, family friendly."""
        if parse_date(check_out, "check_out") <= parse_date(check_in, "check_in"):
            raise ToolArgumentError(f"check_out {check_out} must be after check_in {check_in}")
        wanted = city_key(city)
        ranked: list[tuple[bool, Hotel]] = []
        for row in hotels:
            if city_key(row["city"]) != wanted:
                continue
            if max_price_per_night is not None and row["price_per_night"] > max_price_per_night:
                continue
            if family_friendly and not row["family_friendly"]:
                continue
            is_near = bool(near) and near_matches(near or "", [row["area"], row["name"], *row.get("landmarks", [])])
            ranked.append((is_near, Hotel(**{k: v for k, v in row.items() if k in Hotel.model_fields})))
        ranked.sort(key=lambda item: (not item[0], -item[1].rating, item[1].price_per_night, item[1].hotel_id))
        matches = [hotel for _, hotel in ranked]
        return HotelSearch(hotels=matches, best=matches[0] if matches else None, count=len(matches))

    @registry.tool(version="2", timeout_s=10, retries=3, concurrency_class="travel")
    def get_weather(
        city: Annotated[City, Field(description="City of the forecast.")],
        date: Annotated[IsoDate, Field(description="Day of the forecast, YYYY-MM-DD.")],
    ) -> Weather:
        """Weather forecast for a city on a day: condition, high/low temperature, precipitation."""
        day = parse_date(date)
        row = data.weather.get((city_key(city), date))
        if row is not None:
            return Weather(**row)
        known = timetable.city(city)
        if known is None:
            raise ToolDataNotFound(f"no weather data for {city}", hint=f"cities: {', '.join(timetable.names())}")
        return Weather(**timetable.weather(known, day))

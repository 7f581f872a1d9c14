"""Travel tools: `search_flights`, `search_hotels`, `get_weather` (docs/demo-catalog.md).

A search with no match returns `count: 0`, an empty list and `cheapest`/`best` null; it does not
fail (a plan can test `count > \\`0\\`` in a success_condition).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from executors.errors import ToolArgumentError, ToolDataNotFound
from executors.registry import ToolRegistry
from executors.tools.data import City, DemoData, IsoDate, city_key, parse_date


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
    hotels: list[Hotel] = Field(description="Matches, best rated first (then cheapest).")
    best: Hotel | None = Field(description="Highest rated match (cheapest on ties); null when there is none.")
    count: int


class Weather(BaseModel):
    city: str
    date: str
    condition: str
    temp_high_c: float
    temp_low_c: float
    precipitation_mm: float


def register_travel(registry: ToolRegistry, data: DemoData) -> None:
    @registry.tool(version="1", timeout_s=10, retries=3, concurrency_class="travel")
    def search_flights(
        origin: Annotated[City, Field(description="Departure city.")],
        destination: Annotated[City, Field(description="Arrival city.")],
        date: Annotated[IsoDate, Field(description="Departure date, YYYY-MM-DD.")],
        max_price: Annotated[float | None, Field(gt=0, description="Highest fare in CNY.")] = None,
    ) -> FlightSearch:
        """Search one-way flights between two cities on a date; returns the matches and the cheapest."""
        parse_date(date)
        origin_key, destination_key = city_key(origin), city_key(destination)
        matches = [
            Flight(**{k: v for k, v in row.items() if k in Flight.model_fields})
            for row in data.flights
            if city_key(row["origin"]) == origin_key
            and city_key(row["destination"]) == destination_key
            and row["date"] == date
            and (max_price is None or row["price"] <= max_price)
        ]
        matches.sort(key=lambda f: (f.depart, f.flight_id))
        cheapest = min(matches, key=lambda f: (f.price, f.depart), default=None)
        return FlightSearch(flights=matches, cheapest=cheapest, count=len(matches))

    @registry.tool(version="1", timeout_s=10, retries=3, concurrency_class="travel")
    def search_hotels(
        city: Annotated[City, Field(description="City to stay in.")],
        check_in: Annotated[IsoDate, Field(description="Check-in date, YYYY-MM-DD.")],
        check_out: Annotated[IsoDate, Field(description="Check-out date, YYYY-MM-DD (after check-in).")],
        max_price_per_night: Annotated[float | None, Field(gt=0, description="Highest nightly rate in CNY.")] = None,
        near: Annotated[str | None, Field(max_length=64, description='Area or landmark, e.g. "West Lake".')] = None,
        family_friendly: Annotated[bool | None, Field(description="Only family-friendly hotels when true.")] = None,
    ) -> HotelSearch:
        """Search hotels in a city for a stay; optionally near a landmark, under a nightly price, family friendly."""
        if parse_date(check_out, "check_out") <= parse_date(check_in, "check_in"):
            raise ToolArgumentError(f"check_out {check_out} must be after check_in {check_in}")
        wanted = city_key(city)
        near_key = near.casefold().strip() if near else None
        matches = []
        for row in data.hotels:
            if city_key(row["city"]) != wanted:
                continue
            if max_price_per_night is not None and row["price_per_night"] > max_price_per_night:
                continue
            if family_friendly and not row["family_friendly"]:
                continue
            places = [row["area"], row["name"], *row.get("landmarks", [])]
            if near_key and not any(near_key in place.casefold() for place in places):
                continue
            matches.append(Hotel(**{k: v for k, v in row.items() if k in Hotel.model_fields}))
        matches.sort(key=lambda h: (-h.rating, h.price_per_night, h.hotel_id))
        return HotelSearch(hotels=matches, best=matches[0] if matches else None, count=len(matches))

    @registry.tool(version="1", timeout_s=10, retries=3, concurrency_class="travel")
    def get_weather(
        city: Annotated[City, Field(description="City of the forecast.")],
        date: Annotated[IsoDate, Field(description="Day of the forecast, YYYY-MM-DD.")],
    ) -> Weather:
        """Weather forecast for a city on a day: condition, high/low temperature, precipitation."""
        parse_date(date)
        row = data.weather.get((city_key(city), date))
        if row is None:
            known = sorted({r["city"] for r in data.weather.values()})
            raise ToolDataNotFound(
                f"no forecast for {city} on {date}", hint=f"cities: {', '.join(known)}; dates: June 2026"
            )
        return Weather(**row)

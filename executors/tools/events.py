"""Event tools: `search_venues`, `quote_catering` (docs/demo-catalog.md).

Venues are the shipped table plus generated ones, so that every city of `cities.json` has a venue in
each capacity tier from 20-60 to 500-800 seats (ids such as `V-SZV-03`: the city code and the
tier), built once per registry, so every id `search_venues` returns is accepted by `quote_catering`. A generated venue
is booked on a stable share of days (`timetable.venue_booked`).

`search_venues` with no match (an unknown city, too many guests) returns `count: 0` and `best: null`.
`best` is the cheapest venue that fits (the smallest one on ties). A catering quote is `per_person`
(menu price × the venue's catering factor) × guests; its id is derived from the inputs, so the same
request always gets the same quote.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from executors.errors import ToolDataNotFound
from executors.registry import ToolRegistry
from executors.tools.data import City, DemoData, IsoDate, city_key, parse_date
from executors.tools.timetable import Timetable, venue_booked

Menu = Literal["standard", "vegetarian", "premium"]


class Venue(BaseModel):
    venue_id: str
    name: str
    city: str
    capacity: int = Field(description="Seated capacity.")
    price: float = Field(description="Hire for the day, CNY.")
    area: str


class VenueSearch(BaseModel):
    venues: list[Venue] = Field(description="Venues free that day with enough capacity, cheapest first.")
    best: Venue | None = Field(description="Cheapest fitting venue; null when there is none.")
    count: int


class CateringQuote(BaseModel):
    quote_id: str
    venue_id: str
    guests: int
    menu: Menu
    per_person: float = Field(description="CNY per guest.")
    total: float = Field(description="CNY for all guests.")


def register_events(registry: ToolRegistry, data: DemoData) -> None:
    venues = data.venues + Timetable.from_json(data.cities).venues(data.venues)
    venues_by_id = {row["venue_id"]: row for row in venues}

    @registry.tool(version="2", timeout_s=10, retries=3, concurrency_class="events")
    def search_venues(
        city: Annotated[City, Field(description="City of the event.")],
        date: Annotated[IsoDate, Field(description="Day of the event, YYYY-MM-DD.")],
        capacity: Annotated[int, Field(ge=1, le=100_000, description="Number of guests to seat.")],
        max_price: Annotated[float | None, Field(gt=0, description="Highest hire price in CNY.")] = None,
    ) -> VenueSearch:
        """Find event venues in a city that are free on a date and seat at least `capacity` guests."""
        parse_date(date)
        wanted = city_key(city)
        matches = [
            Venue(**{k: v for k, v in row.items() if k in Venue.model_fields})
            for row in venues
            if city_key(row["city"]) == wanted
            and row["capacity"] >= capacity
            and not venue_booked(row, date)
            and (max_price is None or row["price"] <= max_price)
        ]
        matches.sort(key=lambda v: (v.price, v.capacity, v.venue_id))
        return VenueSearch(venues=matches, best=matches[0] if matches else None, count=len(matches))

    @registry.tool(version="1", timeout_s=10, retries=3, concurrency_class="events")
    def quote_catering(
        venue_id: Annotated[str, Field(min_length=1, max_length=32, description='Venue id, e.g. "V-HZ-01".')],
        guests: Annotated[int, Field(ge=1, le=100_000, description="Number of guests to feed.")],
        menu: Annotated[Menu, Field(description="Menu: standard, vegetarian or premium.")] = "standard",
    ) -> CateringQuote:
        """Quote catering at a venue for a number of guests and a menu (per-person price and total, CNY)."""
        venue = venues_by_id.get(venue_id.strip().upper())
        if venue is None:
            raise ToolDataNotFound(f"unknown venue {venue_id!r}", hint="use a venue_id from search_venues")
        venue_id = venue["venue_id"]
        per_person = round(data.catering["menus"][menu]["per_person"] * venue.get("catering_factor", 1.0), 2)
        digest = hashlib.sha256(f"{venue_id}|{guests}|{menu}".encode()).hexdigest()[:10].upper()
        return CateringQuote(
            quote_id=f"Q-{digest}",
            venue_id=venue_id,
            guests=guests,
            menu=menu,
            per_person=per_person,
            total=round(per_person * guests, 2),
        )

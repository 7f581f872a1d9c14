"""Deterministic demo timetables: any known city and any date give sensible, stable answers.

The fixed tables in `executors/data/` (flights, hotels, venues, June 2026 weather) stay as they are;
`Timetable` extends them from `cities.json` the way real data repeats:

- flights: a weekly timetable per ordered city pair. Origin, destination and weekday seed the
  number of flights (2-6, more between big hubs), their carriers (the country's; abroad, the
  international carriers of both countries), flight numbers and departure times (06:30-21:30);
  the duration follows the great-circle distance.
  The fare is distance-based, times a weekday and a season factor and a per-date, per-slot spread.
- hotels: per city, one generated hotel for each area without a shipped hotel, and more until the
  city has six ("<Area> Garden Hotel", always one budget "<Area> Business Inn"); prices by hub
  size and style, some family friendly.
- venues: per city, one generated venue for each capacity tier (20-60 ... 500-800 seats) that no
  shipped venue covers; ids encode the city code and the tier (`V-SZV-03`); a few are booked each day.
- weather: the monthly normal of the city plus a small daily variation.

Every pseudo-random choice is a SHA-256 of its inputs (`stable_unit`): no `random`, no salted
`hash()`, nothing that depends on the process. A Timetable is immutable and built per registry.
"""

from __future__ import annotations

import calendar
import datetime as dt
import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from executors.tools.data import city_key

HOTEL_STYLES: tuple[tuple[str, float, float], ...] = (  # (name suffix, price factor, base rating); budget first
    ("Business Inn", 0.6, 4.0),
    ("Garden Hotel", 1.1, 4.4),
    ("Grand Hotel", 1.6, 4.6),
    ("Family Suites", 1.0, 4.3),
    ("Boutique Hotel", 1.4, 4.5),
    ("Riverside Lodge", 1.2, 4.2),
)
HOTEL_BASE_PRICE = {1: 420.0, 2: 560.0, 3: 760.0}  # CNY per night by hub size
HOTELS_PER_CITY = 6
VENUE_TIERS: tuple[tuple[int, int, tuple[str, ...]], ...] = (  # (min seats, max seats, name suffixes)
    (20, 60, ("Tea House", "Salon", "Loft")),
    (60, 150, ("Meeting Room", "Garden Hall")),
    (120, 300, ("Conference Hall", "Forum")),
    (250, 500, ("Convention Hall", "Ballroom")),
    (500, 800, ("Expo Hall", "Convention Center")),
)
VENUE_SEAT_PRICE = {1: 60.0, 2: 70.0, 3: 85.0}  # CNY of hire per seat by hub size
VENUE_BOOKING_RATE = 0.08  # share of days a generated venue is already booked
WEEKDAY_FARE = (1.0, 0.92, 0.9, 1.0, 1.12, 1.05, 1.15)  # Monday first
SEASON_FARE = (1.15, 1.2, 0.95, 1.0, 1.05, 1.0, 1.2, 1.2, 0.95, 1.15, 0.9, 0.95)  # January first
WET = frozenset({"showers", "rain", "thunderstorms", "snow"})


def stable_unit(*parts: object) -> float:
    """A number in [0, 1) that depends only on `parts` (SHA-256, the same in every process)."""
    digest = hashlib.sha256("|".join(str(part) for part in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def stable_index(size: int, *parts: object) -> int:
    return min(size - 1, int(stable_unit(*parts) * size))


def _place_key(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def near_matches(near: str, places: Iterable[str]) -> bool:
    """Whether `near` names one of `places`: case-insensitive, a substring either way ("bund" ~ "The Bund")."""
    wanted = _place_key(near)
    return bool(wanted) and any(
        key and (wanted in key or key in wanted) for key in (_place_key(place) for place in places)
    )


@dataclass(frozen=True)
class Area:
    name: str
    landmarks: tuple[str, ...]


@dataclass(frozen=True)
class Climate:
    """Monthly normals, index 0 = January."""

    high_c: tuple[float, ...]
    low_c: tuple[float, ...]
    rain_mm: tuple[float, ...]
    condition: tuple[str, ...]


@dataclass(frozen=True)
class CityInfo:
    name: str
    country: str
    code: str
    hub: int
    currency: str
    lat: float
    lon: float
    areas: tuple[Area, ...]
    climate: Climate

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> CityInfo:
        climate = row["climate"]
        return cls(
            name=row["name"],
            country=row["country"],
            code=row["code"],
            hub=int(row["hub"]),
            currency=row["currency"],
            lat=float(row["lat"]),
            lon=float(row["lon"]),
            areas=tuple(Area(a["name"], tuple(a.get("landmarks", []))) for a in row["areas"]),
            climate=Climate(
                high_c=tuple(climate["high_c"]),
                low_c=tuple(climate["low_c"]),
                rain_mm=tuple(climate["rain_mm"]),
                condition=tuple(climate["condition"]),
            ),
        )


@dataclass(frozen=True)
class Airline:
    code: str
    name: str
    country: str
    international: bool


def distance_km(a: CityInfo, b: CityInfo) -> float:
    """Great-circle distance (haversine, Earth radius 6371 km)."""
    lat1, lon1, lat2, lon2 = map(math.radians, (a.lat, a.lon, b.lat, b.lon))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371.0 * math.asin(math.sqrt(h))


def _minutes(day: dt.date, minutes: int) -> str:
    return (dt.datetime.combine(day, dt.time()) + dt.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M")


class Timetable:
    """The cities of `cities.json` and what they generate. Lookups are by `city_key` (case-,
    space- and apostrophe-insensitive); an unknown city is `None`, never an exception."""

    def __init__(self, cities: Iterable[CityInfo], airlines: Iterable[Airline]) -> None:
        self.cities = tuple(cities)
        self.airlines = tuple(airlines)
        self._by_key = {city_key(city.name): city for city in self.cities}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Timetable:
        return cls(
            (CityInfo.from_json(row) for row in document["cities"]),
            (Airline(a["code"], a["name"], a["country"], bool(a["international"])) for a in document["airlines"]),
        )

    def city(self, name: str) -> CityInfo | None:
        return self._by_key.get(city_key(name))

    def names(self) -> list[str]:
        return sorted(city.name for city in self.cities)

    # -- flights ---------------------------------------------------------------------------------

    def flights(self, origin: CityInfo, destination: CityInfo, day: dt.date) -> list[dict[str, Any]]:
        """The scheduled flights of one day, as rows of the flights.json shape (without `date`)."""
        if origin.code == destination.code:
            return []
        route, weekday = f"{origin.code}-{destination.code}", day.weekday()
        international = origin.country != destination.country
        carriers = [
            a
            for a in self.airlines
            if a.country in {origin.country, destination.country} and (a.international or not international)
        ] or list(self.airlines)
        km = distance_km(origin, destination)
        count = 2 + min(4, stable_index(3, route, weekday, "count") + (origin.hub + destination.hub) // 3)
        width = 900 // count  # departures spread over 06:30-21:30
        base_fare = (250 + 0.62 * km) * (1.3 if international else 1.0) + (300 if international else 0)
        fare_factor = WEEKDAY_FARE[weekday] * SEASON_FARE[day.month - 1]
        rows: list[dict[str, Any]] = []
        used: set[str] = set()
        for slot in range(count):
            airline = carriers[stable_index(len(carriers), route, weekday, slot, "airline")]
            number = 1000 + stable_index(9000, route, weekday, slot, "number")
            while f"{airline.code}{number}" in used:
                number += 1
            flight_id = f"{airline.code}{number}"
            used.add(flight_id)
            offset = int(stable_unit(route, weekday, slot, "time") * max(0, width - 30))
            depart = 390 + slot * width + offset // 5 * 5
            duration = max(50, 5 * round((40 + km / 13.5) / 5) + 5 * stable_index(3, route, weekday, slot, "dur"))
            spread = 0.8 + 0.5 * stable_unit(route, day.isoformat(), slot, "fare")
            rows.append(
                {
                    "flight_id": flight_id,
                    "airline": airline.name,
                    "origin": origin.name,
                    "destination": destination.name,
                    "depart": _minutes(day, depart),
                    "arrive": _minutes(day, depart + duration),
                    "price": float(max(200, 10 * round(base_fare * fare_factor * spread / 10))),
                }
            )
        return rows

    # -- hotels ----------------------------------------------------------------------------------

    def hotels(self, shipped: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Generated hotels of every city (rows of the hotels.json shape), given the shipped ones:
        one in each area without a shipped hotel, more until the city has `HOTELS_PER_CITY`. The
        first is always a business inn (a budget option); the other styles follow in a stable order."""
        budget, *others = HOTEL_STYLES
        rows: list[dict[str, Any]] = []
        for city in self.cities:
            own = [h for h in shipped if city_key(h["city"]) == city_key(city.name)]
            covered = {_place_key(h["area"]) for h in own}
            uncovered = [a for a in city.areas if _place_key(a.name) not in covered]
            order = uncovered + [a for a in city.areas if a not in uncovered]
            styles = [budget, *sorted(others, key=lambda style: stable_unit(city.code, style[0]))]
            for i in range(max(len(uncovered), HOTELS_PER_CITY - len(own))):
                area = order[i % len(order)]
                style, price_factor, rating = styles[i % len(styles)]
                price = HOTEL_BASE_PRICE[city.hub] * price_factor * (1.6 if city.country != "China" else 1.0)
                price *= 0.9 + 0.2 * stable_unit(city.code, i, "price")
                rows.append(
                    {
                        "hotel_id": f"H-{city.code}-{i + 1:02d}",
                        "name": f"{area.name} {style}",
                        "city": city.name,
                        "area": area.name,
                        "price_per_night": float(10 * round(price / 10)),
                        "rating": round(min(4.9, rating - 0.3 + 0.6 * stable_unit(city.code, i, "rating")), 1),
                        "family_friendly": style == "Family Suites"
                        or (style != "Business Inn" and stable_unit(city.code, i, "family") < 0.5),
                        "landmarks": list(area.landmarks),
                    }
                )
        return rows

    # -- venues ----------------------------------------------------------------------------------

    def venues(self, shipped: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Generated venues (rows of the venues.json shape; `booking_rate` instead of
        `unavailable_dates`, see `venue_booked`): in every city, one per capacity tier of
        `VENUE_TIERS` that no shipped venue of the city falls in. Ids are `V-<city code>-<tier>`."""
        rows: list[dict[str, Any]] = []
        for city in self.cities:
            seats = [v["capacity"] for v in shipped if city_key(v["city"]) == city_key(city.name)]
            first_area = stable_index(len(city.areas), city.code, "venue-area")
            for i, (low, high, kinds) in enumerate(VENUE_TIERS):
                if any(low <= capacity <= high for capacity in seats):
                    continue
                capacity = 10 * round((low + (high - low) * stable_unit(city.code, i, "capacity")) / 10)
                area = city.areas[(first_area + i) % len(city.areas)]
                seat_price = VENUE_SEAT_PRICE[city.hub] * (1.5 if city.country != "China" else 1.0)
                price = (2500 + capacity * seat_price) * (0.85 + 0.3 * stable_unit(city.code, i, "price"))
                rows.append(
                    {
                        "venue_id": f"V-{city.code}-{i + 1:02d}",
                        "name": f"{area.name} {kinds[stable_index(len(kinds), city.code, i, 'kind')]}",
                        "city": city.name,
                        "capacity": capacity,
                        "price": float(100 * round(price / 100)),
                        "area": area.name,
                        "catering_factor": (0.9, 1.0, 1.1, 1.2)[stable_index(4, city.code, i, "catering")],
                        "booking_rate": VENUE_BOOKING_RATE,
                    }
                )
        return rows

    # -- weather ---------------------------------------------------------------------------------

    def weather(self, city: CityInfo, day: dt.date) -> dict[str, Any]:
        """The monthly normal of `city` with a small deterministic daily variation."""
        month, iso = day.month - 1, day.isoformat()
        normal = city.climate
        high = round(normal.high_c[month] + 6 * (stable_unit(city.code, iso, "high") - 0.5))
        low = min(round(normal.low_c[month] + 4 * (stable_unit(city.code, iso, "low") - 0.5)), high - 2)
        rain = normal.rain_mm[month]
        wet_share = min(0.7, max(0.08, rain / 250))
        typical = normal.condition[month]
        roll = stable_unit(city.code, iso, "wet")
        if roll < wet_share:
            condition = typical if typical in WET else ("snow" if high <= 1 else "showers")
            per_wet_day = rain / calendar.monthrange(day.year, day.month)[1] / wet_share
            precipitation = max(0.1, round(per_wet_day * (0.4 + 1.2 * stable_unit(city.code, iso, "amount")), 1))
        else:
            dry = ("sunny", "partly cloudy", "cloudy")
            condition = typical if typical not in WET else dry[stable_index(3, city.code, iso, "sky")]
            precipitation = 0.0
        return {
            "city": city.name,
            "date": iso,
            "condition": condition,
            "temp_high_c": float(high),
            "temp_low_c": float(low),
            "precipitation_mm": precipitation,
        }


def venue_booked(row: dict[str, Any], date: str) -> bool:
    """Shipped venues list their `unavailable_dates`; generated ones are booked on a stable share of days."""
    if "unavailable_dates" in row:
        return date in row["unavailable_dates"]
    return stable_unit(row["venue_id"], date, "booked") < float(row.get("booking_rate", 0.0))

"""The demo data shipped in `executors/data/`, loaded once per registry (no network, no globals)."""

from __future__ import annotations

import csv
import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from executors.errors import ToolArgumentError

DATA_DIR = Path(__file__).resolve().parent.parent / "data"

IsoDate = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="A date, YYYY-MM-DD.")]
City = Annotated[str, Field(min_length=1, max_length=64, description='City name, e.g. "Hangzhou".')]


@dataclass(frozen=True)
class DemoData:
    flights: list[dict[str, Any]]
    hotels: list[dict[str, Any]]
    venues: list[dict[str, Any]]
    catering: dict[str, Any]
    currency: dict[str, Any]
    weather: dict[tuple[str, str], dict[str, Any]]
    knowledge: list[dict[str, Any]]
    checklists: dict[str, Any]
    cities: dict[str, Any]  # cities.json: what `timetable.Timetable` generates flights, hotels... from


def load_demo_data(directory: Path | None = None) -> DemoData:
    base = directory or DATA_DIR
    weather: dict[tuple[str, str], dict[str, Any]] = {}
    with (base / "weather.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            weather[(city_key(row["city"]), row["date"])] = {
                "city": row["city"],
                "date": row["date"],
                "condition": row["condition"],
                "temp_high_c": float(row["temp_high_c"]),
                "temp_low_c": float(row["temp_low_c"]),
                "precipitation_mm": float(row["precipitation_mm"]),
            }

    def read(name: str) -> Any:
        return json.loads((base / name).read_text(encoding="utf-8"))

    return DemoData(
        flights=read("flights.json"),
        hotels=read("hotels.json"),
        venues=read("venues.json"),
        catering=read("catering.json"),
        currency=read("currency.json"),
        weather=weather,
        knowledge=read("knowledge.json"),
        checklists=read("checklists.json"),
        cities=read("cities.json"),
    )


def city_key(name: str) -> str:
    """Case-, space- and apostrophe-insensitive city key ("Xi'an", "xian", " XIAN " are equal)."""
    return "".join(ch for ch in name.casefold() if ch.isalnum())


def parse_date(value: str, what: str = "date") -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise ToolArgumentError(f"{what} {value!r} is not a valid YYYY-MM-DD date") from None

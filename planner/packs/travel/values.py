"""Values the grammar may offer an argument, pulled from the request by rules (no model involved).

A 135M model given a free string rambles (the cause of cut-off plans) and mis-copies values; offered
an enum of the request's own cities, dates (normalised; a check-out computed from nights), places,
currencies and numbers, it only has to choose. Argument kinds come from configs/packs/travel/slots.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from planner.dates import find_dates
from planner.lexicon import lexicon
from planner.packs.travel.intent import Intent

CURRENCY_CODES = ("cny", "usd", "eur", "jpy", "gbp", "hkd", "rmb")

NUMBER = re.compile(r"(?<![\w.:/-])(\d+(?:,\d{3})*(?:\.\d+)?)(k\b)?(?![\w:/-])", re.I)
RAW_DATE = re.compile(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b\d{4}-\d{2}-\d{2}\b")
TIME = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:[AaPp][Mm])\b|\b\d{1,2}:\d{2}\b")
PHRASE = re.compile(r"\b[A-Z][\w'&.-]*(?:\s+(?:of\s+|de\s+)?[A-Z][\w'&.-]*)*")
QUOTED = re.compile(r"[\"“']([^\"”']{1,40})[\"”']")
_SKIP_WORDS = (
    "I Please Find Search Book Get Check Plan Show What Which When Where How Can Could Would And Also Then "
    "Need Want Look Buy Reserve Schedule Make Tell Give Help Is Are Do The A An My Me We Our Us Fly AM PM"
)
_SKIP = frozenset(_SKIP_WORDS.split()) | frozenset(c.upper() for c in CURRENCY_CODES)
_MAX_VALUES = 8


@dataclass(frozen=True)
class SlotKinds:
    """Argument name → kind of value (first matching regex wins)."""

    rules: tuple[tuple[str, re.Pattern[str]], ...] = ()

    @classmethod
    def from_yaml(cls, path: Path) -> SlotKinds:
        data = yaml.safe_load(path.read_text()) or {} if path.is_file() else {}
        return cls(tuple((r["kind"], re.compile(r["names"], re.I)) for r in data.get("kinds", [])))

    def kind_of(self, name: str) -> str:
        return next((kind for kind, pattern in self.rules if pattern.search(name)), "text")


@dataclass(frozen=True)
class SlotValues:
    """Candidate literal values per kind for one request (`text`: every span; `number`: numbers)."""

    by_kind: dict[str, list[Any]] = field(default_factory=dict)
    kinds: SlotKinds = field(default_factory=SlotKinds)

    def strings(self, arg_name: str) -> tuple[str, list[str]]:
        kind = self.kinds.kind_of(arg_name)
        return kind, [str(v) for v in self.by_kind.get(kind if kind != "free" else "text", [])]

    def numbers(self) -> list[float | int]:
        return list(self.by_kind.get("number", []))


def extract_values(request: str, intent: Intent, kinds: SlotKinds, today: date) -> SlotValues:
    dates = [*intent.dates]
    if intent.check_out and (intent.nights is not None or "hotel" in intent.goals):
        dates.append(intent.check_out)
    dates = _unique(dates + RAW_DATE.findall(request))
    cities = [*intent.cities, *(v for v in (intent.origin, intent.destination) if v)]
    phrases = [p for p in (_trim(m.group(0)) for m in PHRASE.finditer(request)) if p]
    places = [v for v in (intent.near,) if v] + [p for p in phrases if p not in cities]
    times = [" ".join(t.split()).upper() if "m" in t.lower() else t for t in TIME.findall(request)]
    numbers: list[float | int] = []
    for value in (intent.budget, intent.amount, intent.guests, intent.nights):
        if value is not None:
            numbers.append(_num(value))
    written = find_dates(request, today, lexicon("en"))
    for m in NUMBER.finditer(request):
        if any(f.start <= m.start(1) < f.end for f in written):
            continue
        numbers.append(_num(float(m.group(1).replace(",", "")) * (1000 if m.group(2) else 1)))
    number_text = [str(n) for n in numbers if not any(str(n) in d for d in dates)]
    quoted = QUOTED.findall(request)
    text = [*cities, *places, *dates, *times, *quoted, *number_text]
    by_kind = {
        "date": dates,
        "end_date": dates[1:],
        "origin": [*(v for v in (intent.origin,) if v), *cities] or phrases,
        "destination": [*(v for v in (intent.destination,) if v), *cities] or phrases,
        "city": [*(v for v in (intent.destination,) if v), *cities] or phrases,
        "place": places,
        "currency": list(intent.currencies),
        "time": times,
        "text": text,
        "number": numbers,
    }
    return SlotValues({k: _unique(v)[:_MAX_VALUES] for k, v in by_kind.items()}, kinds)


def _trim(phrase: str) -> str:
    skip = _SKIP | {m.capitalize() for m in lexicon("en").months}
    words = [w.strip(".,;:!?") for w in phrase.split()]
    while words and words[0] in skip:
        words = words[1:]
    while words and words[-1] in skip:
        words = words[:-1]
    return " ".join(words).strip(".")


def _num(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)


def _unique(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value not in seen and value not in ("", None):
            seen.append(value)
    return seen

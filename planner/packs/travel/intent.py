"""A structured intent pulled from the request by rules: what the user wants and the slot values.

The model sees it next to the request (dates already normalised to YYYY-MM-DD, amounts as numbers);
the fallback planner builds plans from it. Keywords and the city gazetteer come from
configs/packs/travel/fallback_rules.yaml, not from code.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import Any

from planner.values import MONTHS

_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.I)
DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\b", re.I)
NIGHTS = re.compile(r"\b(\d{1,2})[- ]nights?\b|\bfor\s+(\d{1,2})\s+nights?\b", re.I)
BUDGET = re.compile(
    r"\b(?:under|below|budget(?: of| is)?|within|max(?:imum)?|up to|less than|cap(?:ped)? at|limit(?: of)?)\s*"
    r"(?:cny|rmb|¥|usd|\$)?\s*(\d[\d,]*(?:\.\d+)?)\s*(k\b)?",
    re.I,
)
GUESTS = re.compile(r"\b(\d{1,5})\s*(?:guests|people|persons|attendees|participants|delegates|pax|colleagues)\b", re.I)
CURRENCY = re.compile(r"\b(CNY|USD|EUR|JPY|GBP|HKD|RMB|yuan|dollars?|euros?|yen|pounds?)\b", re.I)
AMOUNT_CURRENCY = re.compile(
    r"(\d[\d,]*(?:\.\d+)?)\s*(CNY|USD|EUR|JPY|GBP|HKD|RMB|yuan|dollars?|euros?|yen|pounds?)\b", re.I
)
FROM_TO = re.compile(r"\bfrom\s+([A-Z][a-z]+)\s+to\s+([A-Z][a-z]+)|\b([A-Z][a-z]+)\s*(?:→|->|to)\s*([A-Z][a-z]+)")
NEAR = re.compile(r"\bnear\s+(?:the\s+)?([A-Z][\w']*(?:\s+[A-Z][\w']*)*)")
CURRENCY_NAMES = {
    "rmb": "CNY",
    "yuan": "CNY",
    "dollar": "USD",
    "dollars": "USD",
    "euro": "EUR",
    "euros": "EUR",
    "yen": "JPY",
    "pound": "GBP",
    "pounds": "GBP",
}


@dataclass(frozen=True)
class Intent:
    goals: tuple[str, ...] = ()
    cities: tuple[str, ...] = ()
    origin: str | None = None
    destination: str | None = None
    dates: tuple[str, ...] = ()
    nights: int | None = None
    budget: float | None = None
    guests: int | None = None
    menu: str | None = None
    currencies: tuple[str, ...] = ()
    amount: float | None = None
    near: str | None = None
    family: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Only the slots that were found (what the prompt shows)."""
        return {
            k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items() if v not in (None, (), False, {})
        }

    @property
    def check_in(self) -> str | None:
        return self.dates[0] if self.dates else None

    @property
    def check_out(self) -> str | None:
        if len(self.dates) >= 2:
            return self.dates[1]
        if self.dates:
            return (date.fromisoformat(self.dates[0]) + timedelta(days=self.nights or 1)).isoformat()
        return None


class IntentExtractor:
    def __init__(self, goal_keywords: dict[str, list[str]], cities: list[str], today: date) -> None:
        self.goal_keywords = {goal: [w.lower() for w in words] for goal, words in goal_keywords.items()}
        self.cities = cities
        self.today = today

    def extract(self, request: str) -> Intent:
        lower = request.lower()
        words = set(re.findall(r"[a-z]+", lower))
        goals = tuple(
            goal
            for goal, keys in self.goal_keywords.items()
            if any((k in lower) if " " in k else (k in words) for k in keys)
        )
        cities = self._cities(request)
        origin = destination = None
        route = FROM_TO.search(request)
        if route:
            a, b = (route.group(1), route.group(2)) if route.group(1) else (route.group(3), route.group(4))
            if a in self.cities or b in self.cities:
                origin, destination = a, b
        nights_match = NIGHTS.search(request)
        nights = int(nights_match.group(1) or nights_match.group(2)) if nights_match else None
        budget = None
        if (m := BUDGET.search(request)) is not None:
            budget = float(m.group(1).replace(",", "")) * (1000 if m.group(2) else 1)
        guests = int(g.group(1)) if (g := GUESTS.search(request)) else None
        menu = next((m for m in ("vegetarian", "premium", "standard") if m in lower), None)
        currencies = tuple(dict.fromkeys(_currency(c) for c in CURRENCY.findall(request)))
        amount = None
        if (a := AMOUNT_CURRENCY.search(request)) is not None:
            amount = float(a.group(1).replace(",", ""))
        near = n.group(1) if (n := NEAR.search(request)) else None
        family = bool(re.search(r"\b(family|kids|children|child)\b", lower))
        return Intent(
            goals=goals,
            cities=cities,
            origin=origin,
            destination=destination,
            dates=self._dates(request),
            nights=nights,
            budget=budget,
            guests=guests,
            menu=menu,
            currencies=currencies,
            amount=amount,
            near=near,
            family=family,
        )

    def _cities(self, request: str) -> tuple[str, ...]:
        found = [(request.find(city), city) for city in self.cities if re.search(rf"\b{re.escape(city)}\b", request)]
        return tuple(city for _, city in sorted(found))

    def _dates(self, request: str) -> tuple[str, ...]:
        found: list[tuple[int, str]] = []
        for m in ISO_DATE.finditer(request):
            found.append((m.start(), m.group(0)))
        for m in MONTH_DAY.finditer(request):
            found.append((m.start(), self._resolve(MONTHS[m.group(1).lower()], int(m.group(2)))))
        for m in DAY_MONTH.finditer(request):
            found.append((m.start(), self._resolve(MONTHS[m.group(2).lower()], int(m.group(1)))))
        return tuple(dict.fromkeys(d for _, d in sorted(found) if d))

    def _resolve(self, month: int, day: int) -> str:
        """The next such day on or after today."""
        for year in (self.today.year, self.today.year + 1):
            try:
                candidate = date(year, month, day)
            except ValueError:
                return ""
            if candidate >= self.today:
                return candidate.isoformat()
        return ""


def _currency(text: str) -> str:
    return CURRENCY_NAMES.get(text.lower(), text.upper())

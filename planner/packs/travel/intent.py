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

from planner.dates import find_dates
from planner.lexicon import lexicon_for

NIGHTS = re.compile(r"\b(\d{1,2})[- ]nights?\b|\bfor\s+(\d{1,2})\s+nights?\b|(\d{1,2})\s*(?:个晚上|晚|夜)", re.I)
BUDGET = re.compile(
    r"\b(?:under|below|budget(?: of| is)?|within|max(?:imum)?|up to|less than|cap(?:ped)? at|limit(?: of)?)\s*"
    r"(?:cny|rmb|¥|usd|\$)?\s*(\d[\d,]*(?:\.\d+)?)\s*(k\b)?",
    re.I,
)
GUESTS = re.compile(r"\b(\d{1,5})\s*(?:guests|people|persons|attendees|participants|delegates|pax|colleagues)\b", re.I)
_CURRENCY_WORDS = r"CNY|USD|EUR|JPY|GBP|HKD|RMB|yuan|dollars?|euros?|yen|pounds?"
_CURRENCY_ZH = r"人民币|美元|欧元|日元|英镑|港币"
CURRENCY = re.compile(rf"\b({_CURRENCY_WORDS})\b|({_CURRENCY_ZH})", re.I)
AMOUNT_CURRENCY = re.compile(rf"(\d[\d,]*(?:\.\d+)?)\s*(?:({_CURRENCY_WORDS})\b|({_CURRENCY_ZH}))", re.I)
_PLACE = r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2}"
FROM_TO = re.compile(rf"\bfrom\s+({_PLACE})\s+to\s+({_PLACE})|\b([A-Z][a-z]+)\s*(?:→|->|to)\s*([A-Z][a-z]+)")
_ALIAS_ROUTE = re.compile(r"从\s*(\S{1,4}?)\s*(?:飞|坐|乘)?\s*到\s*(\S{1,4}?)(?=的|，|。|,|\s|$)")
NEAR = re.compile(r"\bnear\s+(?:the\s+)?([A-Z][\w']*(?:\s+[A-Z][\w']*)*)|([\u4e00-\u9fff]{2,4}?)附近")
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
    "人民币": "CNY",
    "美元": "USD",
    "欧元": "EUR",
    "日元": "JPY",
    "英镑": "GBP",
    "港币": "HKD",
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
    def __init__(
        self,
        goal_keywords: dict[str, list[str]],
        cities: list[str],
        today: date,
        aliases: dict[str, str] | None = None,
    ) -> None:
        self.goal_keywords = {goal: [w.lower() for w in words] for goal, words in goal_keywords.items()}
        self.cities = cities
        self.today = today
        self.aliases = aliases or {}

    def extract(self, request: str) -> Intent:
        lower = request.lower()
        words = set(re.findall(r"[a-z]+", lower))
        goals = tuple(
            goal
            for goal, keys in self.goal_keywords.items()
            if any((k in lower) if " " in k or not k.isascii() else (k in words) for k in keys)
        )
        cities = self._cities(request)
        origin = destination = None
        route = FROM_TO.search(request)
        if route and route.group(1):  # "from X to Y" says which is which, whatever the gazetteer knows
            origin, destination = route.group(1), route.group(2)
            cities = tuple(dict.fromkeys((origin, destination, *cities)))
        elif route and (route.group(3) in self.cities or route.group(4) in self.cities):
            origin, destination = route.group(3), route.group(4)
        elif (written := _ALIAS_ROUTE.search(request)) and {written.group(1), written.group(2)} <= set(self.aliases):
            origin, destination = self.aliases[written.group(1)], self.aliases[written.group(2)]
        nights_match = NIGHTS.search(request)
        nights = int(next(g for g in nights_match.groups() if g)) if nights_match else None
        budget = None
        if (m := BUDGET.search(request)) is not None:
            budget = float(m.group(1).replace(",", "")) * (1000 if m.group(2) else 1)
        guests = int(g.group(1)) if (g := GUESTS.search(request)) else None
        menu = next((m for m in ("vegetarian", "premium", "standard") if m in lower), None)
        currencies = tuple(dict.fromkeys(_currency(a or b) for a, b in CURRENCY.findall(request)))
        amount = None
        if (a := AMOUNT_CURRENCY.search(request)) is not None:
            amount = float(a.group(1).replace(",", ""))
        near = (n.group(1) or n.group(2)) if (n := NEAR.search(request)) else None
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
        found += [(request.find(alias), city) for alias, city in self.aliases.items() if alias in request]
        return tuple(dict.fromkeys(city for _, city in sorted(found)))

    def _dates(self, request: str) -> tuple[str, ...]:
        """Every date the request writes (planner/dates.py: a year it writes is kept, even a past one)."""
        return tuple(dict.fromkeys(f.iso for f in find_dates(request, self.today, lexicon_for(request))))


def _currency(text: str) -> str:
    return CURRENCY_NAMES.get(text.lower(), text.upper())

"""Countries the request names, for an argument that declares an ISO 3166-1 country code.

"available in Germany" → `market: "DE"` for Spotify's "An ISO 3166-1 alpha-2 country code". The names are
pycountry's table of ISO 3166-1 (each country's name, common name and official name) and the lexicon's
`country_aliases` (what people write that the standard does not: "UK", "USA"); a name is matched whole,
as the request writes a capitalised name or code (planner/values.py `phrase`, `code`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

import pycountry

_DECLARES = re.compile(r"\b(?:ISO[ -]?3166(?:-1)?|country code)\b", re.IGNORECASE)
_ALPHA3 = re.compile(r"\balpha[ -]?3\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def country_format(schema: Any) -> str | None:
    """"alpha_2" or "alpha_3" when the description's first sentence says the argument *is* an ISO 3166-1
    country code ("An ISO 3166-1 alpha-2 country code."); None otherwise (a filter that only mentions codes
    in a later sentence, Woosmap's `components: country:fr`, writes them in its own syntax)."""
    if not isinstance(schema, dict) or schema.get("type", "string") != "string" or "enum" in schema:
        return None
    first = _SENTENCE.split(str(schema.get("description", "")).strip(), maxsplit=1)[0]
    if not _DECLARES.search(first):
        return None
    return "alpha_3" if _ALPHA3.search(first) else "alpha_2"


@lru_cache(maxsize=1)
def _table() -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    for country in pycountry.countries:
        codes = (str(country.alpha_2), str(country.alpha_3))
        for name in (getattr(country, "common_name", None), country.name, getattr(country, "official_name", None)):
            if isinstance(name, str) and "," not in name:  # ("Korea, Republic of": the common name is kept)
                table.setdefault(name.lower(), codes)
    return table


def countries_named(texts: Iterable[str], aliases: Mapping[str, str]) -> list[tuple[str, str]]:
    """The (alpha-2, alpha-3) codes of the countries among `texts` (whole names or aliases), in order, once."""
    table = _table()
    found: list[tuple[str, str]] = []
    for text in texts:
        key = " ".join(text.split()).lower().removeprefix("the ")
        alias = aliases.get(key)
        codes = table.get(key)
        if alias is not None and (country := pycountry.countries.get(alpha_2=alias)) is not None:
            codes = (str(country.alpha_2), str(country.alpha_3))
        if codes is not None and codes not in found:
            found.append(codes)
    return found

"""Countries the request names, for an argument that declares an ISO 3166-1 country code.

"available in Germany" → `market: "DE"` for Spotify's "An ISO 3166-1 alpha-2 country code". The names are
pycountry's table of ISO 3166-1 (each country's name, common name and official name) and the lexicon's
`country_aliases` (what people write that the standard does not: "UK", "USA"); a name is matched whole,
as the request writes a capitalised name or code (planner/values.py `phrase`, `code`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pycountry

from planner.argkinds import ordered_tokens

_DECLARES = re.compile(r"\b(?:ISO[ -]?3166(?:-1)?|country code)\b", re.IGNORECASE)
# a description that gives a code another form than ISO 3166-1 alpha-2 (a numeric or three-letter one)
_OTHER_FORM = re.compile(r"\b(?:alpha[ -]?3|three[ -]letter|numeric|UN M\.?49)\b", re.IGNORECASE)
_ALPHA3 = re.compile(r"\balpha[ -]?3\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s")
# a filter's own syntax in an example: a key, a colon and a code ("country:fr"), several joined by one mark
_KEYED = re.compile(r"(?<![\w:])([a-z_]+):([A-Za-z]{2,3})(?:([|,;])\1:[A-Za-z]{2,3})*(?![\w:])")
_EXAMPLE_LEN = 200  # an example longer than this is prose, not a value to read a syntax from


@dataclass(frozen=True)
class CountryCode:
    """How an argument writes a country: ISO 3166-1 alpha-2 or alpha-3, bare ("DE") or in a filter's own
    syntax read from the schema's example (`key` "country", lower case, `joiner` "|": "country:fr|country:es")."""

    alpha3: bool = False
    key: str = ""
    lower: bool = False
    joiner: str = ""

    def render(self, named: list[tuple[str, str]]) -> str | None:
        """The argument's value for the countries named ((alpha-2, alpha-3) each); None when it takes one
        code only and several are named."""
        codes = [c[1] if self.alpha3 else c[0] for c in named]
        if not codes or (len(codes) > 1 and not self.joiner):
            return None
        written = [f"{self.key}:{c.lower() if self.lower else c}" if self.key else c for c in codes]
        return self.joiner.join(written)


def country_format(schema: Any, name: str = "") -> CountryCode | None:
    """The argument takes ISO 3166-1 country codes: bare when the description's first sentence says it *is*
    one ("An ISO 3166-1 alpha-2 country code.") or, with no description saying otherwise, when its `name` is
    a country's or region's code (`regionCode`, `country_code`: the two letters of ISO 3166-1, which region
    codes are); in the filter's own syntax when the description declares the codes anywhere and an example
    writes one as `key:code` (Woosmap's `components`, "Countries must be passed as an ISO 3166-1 Alpha-2 …
    code", example `country:fr|country:es`). None otherwise."""
    if not isinstance(schema, dict) or schema.get("type", "string") != "string" or "enum" in schema:
        return None
    description = str(schema.get("description", "")).strip()
    if not _DECLARES.search(description):
        words = ordered_tokens(name)
        named = len(words) == 2 and words[0] in ("country", "region") and words[1] == "code"
        return CountryCode(alpha3=False) if named and not _OTHER_FORM.search(description) else None
    listed = schema.get("examples")
    examples = [schema.get("example"), *(listed if isinstance(listed, list) else [])]
    for text in [*(e[:_EXAMPLE_LEN] for e in examples if isinstance(e, str)), description]:
        for match in _KEYED.finditer(text):
            code = match.group(2)
            if _is_code(code):
                return CountryCode(len(code) == 3, match.group(1), code.islower(), match.group(3) or "")
    first = _SENTENCE.split(description, maxsplit=1)[0]
    return CountryCode(alpha3=bool(_ALPHA3.search(first))) if _DECLARES.search(first) else None


def _is_code(code: str) -> bool:
    """An ISO 3166-1 alpha-2 or alpha-3 code, in either case."""
    upper = code.upper()
    found = pycountry.countries.get(alpha_2=upper) if len(upper) == 2 else pycountry.countries.get(alpha_3=upper)
    return found is not None


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

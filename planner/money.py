"""Money the request writes ("25.50 EUR", "$120", "88 元人民币") and the amount objects APIs take for it.

Payment APIs take an amount as an object of a currency code and a number — Adyen's `{"currency": "EUR",
"value": 2550}`, many others `{"currency_code", "amount"}` — often with the number "in minor units". When a
node's flat view (planner/flat_args.py) has an object holding one currency field (a field named for the
currency) and one number field, and the step writes exactly one sum of money, the currency field takes its
ISO 4217 code and the number field its number, in minor units when the field's description says so
(times 10^2, or 10^0 for the lexicon's `zero_decimal` currencies). The currency words and symbols are the
lexicon's `currency_words` (configs/lexicon/<language>.yaml); an upper-case three-letter code written next
to the number counts as itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner.argkinds import ordered_tokens
from planner.lexicon import Lexicon, lexicon, lexicon_for
from planner.values import RequestValues

_CODE = re.compile(r"[A-Z]{3}\b")


@dataclass(frozen=True)
class Money:
    number: float
    currency: str  # ISO 4217


def money_in(values: RequestValues, span: tuple[int, int] | None) -> list[Money]:
    """The sums of money written in the step: a number with a currency code, word or symbol right next to it."""
    text = values.text
    words = {**_words(lexicon("en")), **_words(lexicon_for(text))}
    found: list[Money] = []
    for c in values.candidates:
        if not (c.kind == "number" and c.written and c.start >= 0 and isinstance(c.value, (int, float))):
            continue
        if span is not None and not span[0] <= c.start < span[1]:
            continue
        code = _currency_at(text, c.start, c.end, words)
        if code is not None and all(m.number != c.value for m in found):
            found.append(Money(float(c.value), code))
    return found


def amount_fields(args: Sequence[str], properties: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Object path → (its currency field, its number field), for every object of a flat view that holds
    exactly one field named for the currency and exactly one number field besides."""
    out: dict[str, tuple[str, str]] = {}
    parents = {a.rpartition(".")[0] for a in args if "." in a}
    currency_words = lexicon("en").currency_fields
    for parent in parents:
        fields = [a for a in args if a.rpartition(".")[0] == parent]
        currency = [a for a in fields if set(ordered_tokens(a.rpartition(".")[2])) & currency_words]
        numbers = [a for a in fields if _is_number(properties.get(a)) and a not in currency]
        if len(currency) == 1 and len(numbers) == 1:
            out[parent] = (currency[0], numbers[0])
    return out


def in_declared_unit(money: Money, schema: Any) -> int | float | None:
    """The sum as the field takes it: in minor units when its description says so; None when an integer
    field would have to round it (25.50 for an integer field not in minor units)."""
    lex = lexicon("en")
    described = str(schema.get("description", "")).lower() if isinstance(schema, Mapping) else ""
    number = money.number
    if any(phrase in described for phrase in lex.minor_unit_phrases):
        number = round(number * (1 if money.currency in lex.zero_decimal else 100), 6)
    if float(number).is_integer():
        return int(number)
    integer = isinstance(schema, Mapping) and schema.get("type") == "integer"
    return None if integer else number


def _words(lex: Lexicon) -> dict[str, str]:
    """Currency word or symbol → ISO code."""
    return {word.lower(): code for code, words in lex.currency_words.items() for word in words}


def _currency_at(text: str, start: int, end: int, words: Mapping[str, str]) -> str | None:
    """The currency written right after the number, right before it, or as its symbol ("$25")."""
    written = text[start:end].strip()
    after = text[end:].lstrip()
    before = text[:start].rstrip()
    code = _CODE.match(after) or re.search(r"(?<![A-Za-z])[A-Z]{3}$", before)
    if code is not None:
        return code.group(0)
    for word in sorted(words, key=len, reverse=True):
        if not word.isalpha() and written.startswith(word):  # a symbol the number was read with
            return words[word]
        if after.lower().startswith(word) and not (word.isascii() and after[len(word) : len(word) + 1].isalpha()):
            return words[word]
        if before.lower().endswith(word) and not (word.isascii() and before[: -len(word)][-1:].isalpha()):
            return words[word]
    return None


def _is_number(schema: Any) -> bool:
    return isinstance(schema, Mapping) and schema.get("type") in ("integer", "number")

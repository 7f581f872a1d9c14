"""Values read from what the request writes literally: JSON lists and objects in brackets, runs of quoted
items ('New York', 'Boston' and 'Philadelphia'), numbers (as written and their usual readings: "8%" is
8 and 0.08, "$10,000" is 10000, "two" is 2), a language's own clock ("下午3点半" → 15:30) and a date
written inside quotes.

planner/values.py calls these while it scans the request; each returns values, never claims a span.
"""

from __future__ import annotations

import json
import re
from typing import Any

from planner import dates
from planner.lexicon import Lexicon
from planner.value_candidates import Candidate
from planner.value_patterns import NUMBER


def clock_of(groups: dict[str, str | None], lex: Lexicon) -> str | None:
    hour = int(groups.get("hour") or -1)
    minute = 30 if groups.get("half") else int(groups.get("minute") or 0)
    if groups.get("period") in lex.afternoon_words and hour < 12:
        hour += 12
    return f"{hour:02d}:{minute:02d}" if 0 <= hour <= 23 and 0 <= minute <= 59 else None


def date_reading(text: str) -> str | None:
    if dates.ISO_DATETIME.fullmatch(text):
        return text[:10]
    if dates.SLASH_DATE.fullmatch(text):
        return dates.slash_iso(text)
    return None


_CLOSING = {"'": "'’", '"': '"”', "“": '”"', "‘": "’'", "「": "」", "『": "』", "《": "》"}


def pairs(opening: str, closing: str) -> bool:
    return _CLOSING.get(opening, "").find(closing) >= 0


def parse_bracketed(text: str) -> list[Any] | dict[str, Any] | None:
    """A JSON list/object written in the request; single-quoted string lists are read too (never eval)."""
    for candidate in (text, re.sub(r"'([^'\"]*)'", r'"\1"', text)):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, (list, dict)) and value:
            return value
    return None


def quoted_lists(request: str) -> list[tuple[int, int, list[str]]]:
    """Runs like 'New York', 'Boston', and 'Philadelphia' → one list candidate."""
    runs: list[tuple[int, int, list[str]]] = []
    pattern = re.compile(r"(['\"])([^'\"]{1,80})\1((?:\s*,\s*(?:and\s+|or\s+)?(['\"])[^'\"]{1,80}\4)+)")
    for m in pattern.finditer(request):
        items = [m.group(2), *re.findall(r"['\"]([^'\"]{1,80})['\"]", m.group(3))]
        runs.append((m.start(), m.end(), [i.strip() for i in items]))
    bare = re.compile(
        r"\b([A-Z][\w-]*(?: [A-Z][\w-]*)?)((?:, [A-Z][\w-]*(?: [A-Z][\w-]*)?)+),? and ([A-Z][\w-]*(?: [A-Z][\w-]*)?)"
    )
    for m in bare.finditer(request):
        items = [m.group(1), *m.group(2).split(", ")[1:], m.group(3)]
        runs.append((m.start(), m.end(), [i.strip() for i in items if i.strip()]))
    return runs


def numbers(request: str, free: Any, lex: Lexicon) -> list[Candidate]:
    out: list[Candidate] = []
    for m in NUMBER.finditer(request):
        if not free(m.start(3), m.end(3) + len(m.group(4) or "")):
            continue
        sign, digits, fraction, suffix = m.group(1), m.group(3).replace(",", ""), m.group(4) or "", m.group(5) or ""
        value: float = float(digits + fraction)
        if sign and (m.start() == 0 or request[m.start() - 1] in " (["):
            value = -value
        scale = {"k": 1000, "thousand": 1000, "million": 1_000_000}.get(suffix.lower(), 1)
        written = plain_number(value * scale)
        out.append(Candidate(written, "number", m.start(), m.end()))
        if len(digits) >= 6 and not (sign or fraction or suffix or m.group(2) or "," in m.group(3)):
            out.append(Candidate(digits, "code", m.start(3), m.end(3)))  # "payment 8835502392934513": an id
        if suffix in ("%", "percent"):
            out.append(Candidate(plain_number(round(value / 100, 10)), "number", m.start(), m.end(), written=False))
        elif m.group(2) or "," in m.group(3):
            out.append(Candidate(str(written), "number", m.start(), m.end(), written=False))  # the amount as text
    lower = request.lower()
    edge = r"\b" if lex.segmented else ""
    for word, number in lex.number_words.items():
        for m in re.finditer(rf"{edge}{re.escape(word)}{edge}", lower):
            if free(m.start(), m.end()):
                out.append(Candidate(number, "number", m.start(), m.end()))
    return out


def plain_number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)

"""Values grounded in the request: what an argument could be filled with, found by generic rules.

Nothing here knows a domain. The request is scanned for spans that tool arguments typically take:
quoted text, bracketed JSON lists, e-mail addresses, URLs, phone numbers, dates (as written, and in
ISO form when the year is known or can be inferred), times, numbers (as written and their usual
readings: "8%" is 8 and 0.08, "$10,000" is 10000, "two" is 2), codes ("UPC-A", "ABC123"),
capitalised phrases and short word n-grams. Each candidate remembers where it sits in the request,
so an argument can be offered the values nearest to the step that calls its tool first, and the
words just before it, so "tax rate of 8%" offers 0.08 to `tax_rate` before it offers it elsewhere.

The grammar uses these as *preferred* values; how hard they constrain is the grounding mode
(planner/grammar.py). They are also what the generic fallback planner fills arguments with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from planner.lexicon import ACTION_VERBS, STOPWORDS

MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "twenty": 20,
    "thirty": 30,
    "fifty": 50,
    "hundred": 100,
    "a couple of": 2,
    "a dozen": 12,
    "single": 1,
    "double": 2,
}

QUOTED = re.compile(r"(?<![\w])(['\"“‘])(.{1,120}?)(['\"”’])(?![\w])")
BRACKETS = re.compile(r"\[[^\[\]]{1,400}\]|\{[^{}]{1,400}\}")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
URL = re.compile(r"\b(?:https?://|www\.)[^\s'\"<>]+[^\s'\".,;:!?<>)]")
PHONE = re.compile(r"(?<![\w-])\+?\d[\d\s().-]{5,}\d(?![\w-])")
ISO_DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?\b")
SLASH_DATE = re.compile(r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b")
MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}){_ORD}(?:,?\s+(\d{{4}}))?\b", re.I)
DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({_MONTH})\.?(?:,?\s+(\d{{4}}))?\b", re.I)
TIME = re.compile(r"\b\d{1,2}(?::\d{2})?\s*[AaPp]\.?[Mm]\b\.?|\b\d{1,2}:\d{2}(?::\d{2})?\b")
NUMBER = re.compile(
    r"(?<![\w.])(-)?([$€£¥])?\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?(%|percent\b|k\b|thousand\b|million\b)?"
)
CODE = re.compile(
    r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*(?![\w-])|\b[A-Z]{2,}-[A-Z0-9]+\b"
)
CAPITALISED = re.compile(r"\b[A-Z][\w'&.-]*(?:\s+(?:of|de|the|and|&|du|la|von)\s+[A-Z][\w'&.-]*|\s+[A-Z][\w'&.-]*)*")
EXPRESSION = re.compile(r"(?<![\w.])\(?-?\d+(?:\.\d+)?\)?(?:\s*[-+*/^%<>=]\s*\(?-?\d+(?:\.\d+)?\)?)+(?![\w.])")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9'&-]*|\d+(?:[.,:]\d+)*")

_LEAD_SKIP = frozenset(
    [
        "I",
        "Please",
        "Can",
        "Could",
        "Would",
        "Will",
        "Then",
        "Also",
        "And",
        "After",
        "Finally",
        "Next",
        "First",
        "Find",
        "Get",
        "Search",
        "Book",
        "Make",
        "Create",
        "Calculate",
        "Send",
        "Check",
        "Show",
        "Tell",
        "Give",
        "Help",
        "Generate",
        "Convert",
        "Translate",
        "Analyze",
        "Schedule",
        "Add",
        "Buy",
        "Reserve",
        "The",
        "A",
        "An",
        "My",
        "Our",
        "Let",
        "Lets",
        "Let's",
        "Now",
        "Also",
        "What",
        "Which",
        "When",
        "Where",
        "How",
        "Is",
        "Are",
        "Do",
    ]
) | frozenset(m.capitalize() for m in MONTHS)
MAX_CANDIDATES = 120


@dataclass(frozen=True)
class Candidate:
    """One value the request offers; `start`..`end` is where it was written (-1 when derived)."""

    value: Any
    kind: str  # quoted, list, object, email, url, phone, date, datetime, time, expression, number, code, phrase, ngram
    start: int
    end: int
    cue: str = ""  # the few words just before it ("tax rate of")

    @property
    def is_string(self) -> bool:
        return isinstance(self.value, str)

    @property
    def is_number(self) -> bool:
        return isinstance(self.value, (int, float)) and not isinstance(self.value, bool)


@dataclass
class RequestValues:
    """Every candidate of one request, and its words (for grounded free text)."""

    text: str
    candidates: list[Candidate] = field(default_factory=list)
    words: list[str] = field(default_factory=list)

    def strings(self) -> list[Candidate]:
        return [c for c in self.candidates if c.is_string]

    def numbers(self) -> list[Candidate]:
        return [c for c in self.candidates if c.is_number]

    def lists(self) -> list[Candidate]:
        return [c for c in self.candidates if isinstance(c.value, list)]

    def objects(self) -> list[Candidate]:
        return [c for c in self.candidates if isinstance(c.value, dict)]

    def add(self, candidate: Candidate) -> None:
        if len(self.candidates) < MAX_CANDIDATES and not any(
            c.value == candidate.value and type(c.value) is type(candidate.value) for c in self.candidates
        ):
            self.candidates.append(candidate)


def extract(request: str, today: date) -> RequestValues:
    """All candidates of `request`, in order of position (derived readings right after their span)."""
    out = RequestValues(request)
    claimed: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return not any(start < b and a < end for a, b in claimed)

    def claim(start: int, end: int) -> None:
        claimed.append((start, end))

    found: list[Candidate] = []
    for m in BRACKETS.finditer(request):
        value = _parse_bracketed(m.group(0))
        if value is not None:
            found.append(Candidate(value, "list" if isinstance(value, list) else "object", m.start(), m.end()))
            for item in value if isinstance(value, list) else []:
                if isinstance(item, (str, int, float)) and not isinstance(item, bool):
                    found.append(Candidate(item, "quoted" if isinstance(item, str) else "number", m.start(), m.end()))
    for m in QUOTED.finditer(request):
        inner = m.group(2).strip()
        if inner and _pairs(m.group(1), m.group(3)):
            kind = "date" if ISO_DATETIME.fullmatch(inner) or SLASH_DATE.fullmatch(inner) else "quoted"
            found.append(Candidate(inner, kind, m.start(2), m.end(2)))
            claim(m.start(), m.end())
    quoted_lists = _quoted_lists(request)
    for start, end, items in quoted_lists:
        found.append(Candidate(items, "list", start, end))
    for pattern, kind in ((EMAIL, "email"), (URL, "url")):
        for m in pattern.finditer(request):
            if free(m.start(), m.end()):
                found.append(Candidate(m.group(0), kind, m.start(), m.end()))
                claim(m.start(), m.end())
    for m in ISO_DATETIME.finditer(request):
        found.append(Candidate(m.group(0), "datetime" if len(m.group(0)) > 10 else "date", m.start(), m.end()))
        if len(m.group(0)) > 10:
            found.append(Candidate(m.group(0)[:10], "date", m.start(), m.start() + 10))
        claim(m.start(), m.end())
    for m in SLASH_DATE.finditer(request):
        if free(m.start(), m.end()):
            found.append(Candidate(m.group(0), "date", m.start(), m.end()))
            iso = _slash_iso(m.group(0))
            if iso:
                found.append(Candidate(iso, "date", -1, -1))
            claim(m.start(), m.end())
    for pattern, month_group, day_group in ((MONTH_DAY_YEAR, 1, 2), (DAY_MONTH_YEAR, 2, 1)):
        for m in pattern.finditer(request):
            if not free(m.start(), m.end()):
                continue
            month, day = MONTHS[m.group(month_group).lower().rstrip(".")], int(m.group(day_group))
            year = int(m.group(3)) if m.group(3) else None
            iso = _iso(year, month, day, today)
            if iso is None:
                continue
            found.append(Candidate(m.group(0), "date", m.start(), m.end()))
            found.append(Candidate(iso, "date", m.start(), m.end()))
            claim(m.start(), m.end())
    for m in TIME.finditer(request):
        if free(m.start(), m.end()):
            written = m.group(0).strip().rstrip(".")
            found.append(Candidate(written, "time", m.start(), m.end()))
            normal = _time_normal(written)
            if normal and normal != written:
                found.append(Candidate(normal, "time", -1, -1))
            claim(m.start(), m.end())
    for m in EXPRESSION.finditer(request):
        text = m.group(0)
        if free(m.start(), m.end()) and not SLASH_DATE.fullmatch(text) and not PHONE.fullmatch(text):
            found.append(Candidate(text, "expression", m.start(), m.end()))
            claim(m.start(), m.end())
    for m in PHONE.finditer(request):
        text = m.group(0)
        if free(m.start(), m.end()) and sum(ch.isdigit() for ch in text) >= 7 and not re.fullmatch(r"[\d,]+", text):
            found.append(Candidate(text.strip(), "phone", m.start(), m.end()))
            claim(m.start(), m.end())
    for m in CODE.finditer(request):
        if free(m.start(), m.end()) and not NUMBER.fullmatch(m.group(0)):
            found.append(Candidate(m.group(0), "code", m.start(), m.end()))
            claim(m.start(), m.end())
    for candidate in _numbers(request, free):
        found.append(candidate)
    for m in CAPITALISED.finditer(request):
        phrase = _trim_phrase(m.group(0))
        if phrase and free(m.start(), m.end()):
            start = request.find(phrase, m.start())
            found.append(Candidate(phrase, "phrase", start, start + len(phrase)))
            claim(start, start + len(phrase))
    for start, end, text in _ngrams(request):
        if free(start, end):
            found.append(Candidate(text, "ngram", start, end))
    found.sort(key=lambda c: (c.start if c.start >= 0 else 10**6, c.kind == "ngram"))
    for candidate in found:
        cue = _cue(request, candidate.start) if candidate.start >= 0 else ""
        out.add(Candidate(candidate.value, candidate.kind, candidate.start, candidate.end, cue))
    out.words = list(dict.fromkeys(w for w in WORD.findall(request)))
    return out


def _pairs(opening: str, closing: str) -> bool:
    return {"'": "'’", '"': '"”', "“": '”"', "‘": "’'"}.get(opening, "").find(closing) >= 0


def _parse_bracketed(text: str) -> list[Any] | dict[str, Any] | None:
    """A JSON list/object written in the request; single-quoted string lists are read too (never eval)."""
    for candidate in (text, re.sub(r"'([^'\"]*)'", r'"\1"', text)):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, (list, dict)) and value:
            return value
    return None


def _quoted_lists(request: str) -> list[tuple[int, int, list[str]]]:
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


def _iso(year: int | None, month: int, day: int, today: date) -> str | None:
    try:
        if year is not None:
            return date(year, month, day).isoformat()
        for candidate_year in (today.year, today.year + 1):
            candidate = date(candidate_year, month, day)
            if candidate >= today:
                return candidate.isoformat()
    except ValueError:
        return None
    return None


def _slash_iso(text: str) -> str | None:
    """`MM/DD/YYYY` (US order; `DD/MM` when the first number cannot be a month)."""
    a, b, y = (int(p) for p in text.split("/"))
    year = y + 2000 if y < 100 else y
    month, day = (a, b) if a <= 12 else (b, a)
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def _time_normal(text: str) -> str | None:
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s*([AaPp])?\.?([Mm])?\.?", text.strip())
    if not m:
        return None
    hour, minute = int(m.group(1)), m.group(2) or "00"
    if m.group(3):
        return f"{hour}:{minute} {m.group(3).upper()}M"
    return f"{hour:02d}:{minute}"


def _numbers(request: str, free: Any) -> Iterable[Candidate]:
    for m in NUMBER.finditer(request):
        if not free(m.start(3), m.end(3) + len(m.group(4) or "")):
            continue
        sign, digits, fraction, suffix = m.group(1), m.group(3).replace(",", ""), m.group(4) or "", m.group(5) or ""
        value: float = float(digits + fraction)
        if sign and (m.start() == 0 or request[m.start() - 1] in " (["):
            value = -value
        scale = {"k": 1000, "thousand": 1000, "million": 1_000_000}.get(suffix.lower(), 1)
        written = _number(value * scale)
        yield Candidate(written, "number", m.start(), m.end())
        if suffix in ("%", "percent"):
            yield Candidate(_number(round(value / 100, 10)), "number", m.start(), m.end())
        elif m.group(2) or "," in m.group(3):
            yield Candidate(str(written), "number", m.start(), m.end())  # the amount as text
    lower = request.lower()
    for word, number in NUMBER_WORDS.items():
        for m in re.finditer(rf"\b{re.escape(word)}\b", lower):
            yield Candidate(number, "number", m.start(), m.end())


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _trim_phrase(phrase: str) -> str:
    words = [w.strip(".,;:!?") for w in phrase.split()]
    while words and words[0] in _LEAD_SKIP:
        words = words[1:]
    while words and (words[-1] in _LEAD_SKIP or words[-1].lower() in STOPWORDS):
        words = words[:-1]
    return " ".join(words)


def _ngrams(request: str, longest: int = 3) -> Iterable[tuple[int, int, str]]:
    """Content-word n-grams (1..3 words, no stopword at either end) with their character spans."""
    tokens = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"[A-Za-z][A-Za-z'-]*", request)]
    for size in range(longest, 0, -1):
        for i in range(len(tokens) - size + 1):
            window = tokens[i : i + size]
            if any(b[0] - a[1] > 1 for a, b in zip(window, window[1:], strict=False)):
                continue  # not adjacent (punctuation between)
            first, last = window[0][2].lower(), window[-1][2].lower()
            if first in STOPWORDS or last in STOPWORDS or first in ACTION_VERBS or len(window[-1][2]) < 2:
                continue
            yield window[0][0], window[-1][1], request[window[0][0] : window[-1][1]]


def _cue(request: str, start: int, words: int = 4) -> str:
    before = re.findall(r"[A-Za-z]+", request[max(0, start - 48) : start])
    return " ".join(w.lower() for w in before[-words:])


# ranking for one argument ----------------------------------------------------------------------------
def name_tokens(name: str) -> set[str]:
    """`tax_rate` / `taxRate` / `Tax-Rate` → {"tax", "rate"} (and a crude singular of each)."""
    parts = re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", name)
    tokens = {p.lower() for p in parts if p}
    return tokens | {t[:-1] for t in tokens if t.endswith("s") and len(t) > 3}


def rank(
    candidates: Sequence[Candidate],
    arg_name: str,
    description: str = "",
    *,
    span: tuple[int, int] | None = None,
    limit: int = 10,
) -> list[Candidate]:
    """Candidates for one argument, best first: cue words naming the argument, inside the step's span,
    earlier in the request. Derived readings keep their source's position."""
    wanted = name_tokens(arg_name) | {w for w in re.findall(r"[a-z]+", description.lower()) if w not in STOPWORDS}
    own = name_tokens(arg_name)

    def score(item: tuple[int, Candidate]) -> tuple[float, int]:
        index, c = item
        cue = set(c.cue.split())
        s = 3.0 * len(own & cue) + 0.5 * len((wanted - own) & cue)
        if span is not None and c.start >= 0:
            s += 2.0 if span[0] <= c.start < span[1] else 0.0
        s -= 1.5 if c.kind == "ngram" else 0.0
        return (-s, index)

    ordered = sorted(enumerate(candidates), key=score)
    return [c for _, c in ordered[:limit]]


def shift_days(iso: str, days: int) -> str | None:
    try:
        return (date.fromisoformat(iso) + timedelta(days=days)).isoformat()
    except ValueError:
        return None

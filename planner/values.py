"""Values grounded in the request: what an argument could be filled with, found by generic rules.

Nothing here knows a domain. The request is scanned for spans that tool arguments typically take:
quoted text, bracketed JSON lists, e-mail addresses, URLs, phone numbers, dates (as written, and in
ISO form, the year kept as written; relative days resolved against today: planner/dates.py), times,
numbers (as written and their usual readings: "8%" is 8 and 0.08, "$10,000" is 10000, "two" is 2),
codes ("UPC-A", "ABC123"), capitalised phrases and short word n-grams. Each candidate remembers where
it sits in the request, the words just before it (`cue`: "tax rate of 8%" offers 0.08 to `tax_rate`
first) and the word right after it (`tail`: "30 days" offers 30 to `dueDays`). The words come from the
lexicon of the request's language (planner/lexicon.py).

The grammar uses these as *preferred* values; how hard they constrain is the grounding mode
(planner/value_grammar.py). They are also what the generic fallback planner fills arguments with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from planner import dates
from planner.lexicon import Lexicon, lexicon_for, weights

# quoted text, in any of the marks requests use (《》: a title in Chinese)
QUOTED = re.compile(r"(?<![A-Za-z0-9_])(['\"“‘「『《])(.{1,120}?)(['\"”’」』》])(?![A-Za-z0-9_])")
BRACKETS = re.compile(r"\[[^\[\]]{1,400}\]|\{[^{}]{1,400}\}")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
URL = re.compile(r"\b(?:https?://|www\.)[^\s'\"<>]+[^\s'\".,;:!?<>)]")
# a host name; a label may open with "_" (RFC 8552 attribute leaves: `_acme-challenge.example.org`, `_dmarc.…`)
HOST = re.compile(r"(?<![\w@.-])(?:_?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w@-]|\.\w)")
PHONE = re.compile(r"(?<![\w-])\+?\d[\d\s().-]{5,}\d(?![\w-])")
NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.])(-)?([$€£¥])?\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?(%|percent\b|k\b|thousand\b|million\b)?"
)
# a code: letters and digits in parts joined by "-", "_" or ":" ("ORD-7781", "d:bio-10", "urn:isbn:0451"), or
# words a colon joins into one name space ("env:staging", "team:payments": a tag or label as written); an id
# may join its parts with several dashes and underscores in a row (YouTube's base64url `Ks-_Mh1QhMc`)
CODE = re.compile(
    r"(?<![\w:-])(?=[\w:-]*\d)(?=[\w:-]*[A-Za-z])[A-Za-z0-9]+(?:(?:[-_]+|:)[A-Za-z0-9]+)*(?![\w-]|:\w)"
    r"|\b[A-Z]{2,}-[A-Z0-9]+\b"
    r"|(?<![\w:-])[A-Za-z][A-Za-z0-9_-]*(?::[A-Za-z][A-Za-z0-9_-]*)+(?![\w-]|:\w)"
)
# a file's name by its extension ("Q3 report.pdf" is quoted when it has spaces)
_EXTENSIONS = (
    "pdf|docx?|xlsx?|pptx?|odt|ods|csv|tsv|txt|md|rtf|json|xml|ya?ml|zip|tar|gz|tgz|7z|rar"
    "|png|jpe?g|gif|svg|webp|mp3|wav|mp4|mov|avi"
)
FILENAME = re.compile(rf"(?<![\w@./-])[\w-]+(?:\.[\w-]+)*\.(?:{_EXTENSIONS})(?![\w.-])", re.IGNORECASE)
# a "lat,lng" pair, bounded by what is not an ASCII letter or digit (\w would refuse "从31.2304,121.4737到")
COORDINATES = re.compile(r"(?<![A-Za-z0-9_.])(-?\d{1,2}\.\d{2,})\s*,\s*(-?\d{1,3}\.\d{2,})(?![A-Za-z0-9_]|\.\d)")
EXPRESSION = re.compile(r"(?<![\w.])\(?-?\d+(?:\.\d+)?\)?(?:\s*[-+*/^%<>=]\s*\(?-?\d+(?:\.\d+)?\)?)+(?![\w.])")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9'&-]*|\d+(?:[.,:]\d+)*")

MAX_CANDIDATES = 120


@dataclass(frozen=True)
class Candidate:
    """One value the request offers; `start`..`end` is where it was written (-1 when derived)."""

    value: Any
    kind: str  # quoted, list, object, email, url, phone, date, datetime, time, expression, number, code, phrase,
    # ngram, coordinates (a written "lat,lng" pair) and its latitude and longitude
    start: int
    end: int
    cue: str = ""  # the few words just before it ("tax rate of")
    tail: str = ""  # the word right after it ("days" in "30 days")
    iso: str = ""  # dates: the ISO reading (YYYY-MM-DD); times: HH:MM on a 24-hour clock
    written: bool = True  # False: a reading derived from what was written (an ISO form, 8% as 0.08)

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
    language: str = "en"

    def strings(self) -> list[Candidate]:
        return [c for c in self.candidates if c.is_string]

    def numbers(self) -> list[Candidate]:
        return [c for c in self.candidates if c.is_number]

    def lists(self) -> list[Candidate]:
        return [c for c in self.candidates if isinstance(c.value, list)]

    def objects(self) -> list[Candidate]:
        return [c for c in self.candidates if isinstance(c.value, dict)]

    def add(self, candidate: Candidate) -> None:
        """One candidate per value: the first written, unless it was only an n-gram and this one has a shape
        ("the example.org zone" after "record _acme-challenge.example.org": a host, not three words)."""
        for i, c in enumerate(self.candidates):
            if c.value == candidate.value and type(c.value) is type(candidate.value):
                if c.kind == "ngram" and candidate.kind != "ngram":
                    self.candidates[i] = candidate
                return
        if len(self.candidates) < MAX_CANDIDATES:
            self.candidates.append(candidate)


def extract(request: str, today: date) -> RequestValues:
    """All candidates of `request`, in order of position (derived readings right after their span)."""
    lex = lexicon_for(request)
    out = RequestValues(request, language=lex.language)
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
            iso = _date_reading(inner)
            found.append(Candidate(inner, "date" if iso else "quoted", m.start(2), m.end(2), iso=iso or ""))
            claim(m.start(), m.end())
    for start, end, items in _quoted_lists(request):
        found.append(Candidate(items, "list", start, end))
    for m in FILENAME.finditer(request):  # "old_backup_2025.zip": a file's name (never its id, nor a host)
        if free(m.start(), m.end()):
            found.append(Candidate(m.group(0), "filename", m.start(), m.end()))
            claim(m.start(), m.end())
    for pattern, kind in ((EMAIL, "email"), (URL, "url"), (HOST, "url")):  # (a bare host name: "send.shop.io")
        for m in pattern.finditer(request):
            if free(m.start(), m.end()):
                found.append(Candidate(m.group(0), kind, m.start(), m.end()))
                claim(m.start(), m.end())
    for written in dates.find_dates(request, today, lex):
        if not free(written.start, written.end):
            continue
        span = (written.start, written.end)
        if len(written.text) > 10 and dates.ISO_DATETIME.fullmatch(written.text):  # a date and a time
            found.append(Candidate(written.text, "datetime", *span, iso=written.iso))
        else:
            found.append(Candidate(written.text, "date", *span, iso=written.iso))
        if written.iso != written.text:
            found.append(Candidate(written.iso, "date", *span, iso=written.iso, written=False))
        if not written.counted:
            claim(*span)
    for span in dates.zone_spans(request, lex):  # "UTC+08:00": an offset, not a time of its own
        claim(*span)
    for m in dates.TIME.finditer(request):
        if free(m.start(), m.end()):
            text = m.group(0).strip().rstrip(".")
            clock = dates.time_24h(text) or ""
            found.append(Candidate(text, "time", m.start(), m.end(), iso=clock))
            normal = dates.time_normal(text)
            if normal and normal != text:
                found.append(Candidate(normal, "time", m.start(), m.end(), iso=clock, written=False))
            claim(m.start(), m.end())
    for m in COORDINATES.finditer(request):  # "45.5017,-73.5673": a point, and its latitude and longitude
        if free(m.start(), m.end()):
            found.append(Candidate(m.group(0), "coordinates", m.start(), m.end()))
            found.append(Candidate(_number(float(m.group(1))), "latitude", m.start(1), m.end(1)))
            found.append(Candidate(_number(float(m.group(2))), "longitude", m.start(2), m.end(2)))
            claim(m.start(), m.end())
    for pattern in lex.time_patterns:  # a language's own clock ("下午3点半" → 15:30)
        for m in pattern.finditer(request):
            if free(m.start(), m.end()):
                said = _clock_of(m.groupdict(), lex)
                if said is not None:
                    found.append(Candidate(said, "time", m.start(), m.end(), iso=said))
                    claim(m.start(), m.end())
    for m in EXPRESSION.finditer(request):
        text = m.group(0)
        if free(m.start(), m.end()) and not dates.SLASH_DATE.fullmatch(text) and not PHONE.fullmatch(text):
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
    found += _numbers(request, free, lex)
    if lex.naming_words:  # "a tag named blocked-by-legal": the word after a naming word is a name, as written
        naming = "|".join(sorted(lex.naming_words))
        for m in re.finditer(rf"\b(?:{naming})\s+([A-Za-z][\w-]*\w)", request, re.I):
            if m.group(1).lower() not in lex.stopwords and free(m.start(1), m.end(1)):
                found.append(Candidate(m.group(1), "phrase", m.start(1), m.end(1)))
                claim(m.start(1), m.end(1))
    for m in _capitalised(lex).finditer(request):
        for part in _sentence_parts(m):  # "the UK. Block ...": two sentences, no one phrase
            opening = _opens_sentence(request, part.start(), lex)
            phrase = _trim_phrase(part.group(0), lex, opening=opening)
            start = request.find(phrase, part.start())
            if " " not in phrase and _opens_sentence(request, start, lex):
                continue  # a capital that starts a sentence says nothing ("Block 16:00 ...", "Look up ...")
            if phrase and _searched_place(request, start, start + len(phrase), lex):
                claim(start, start + len(phrase))  # "Search Spotify for ...": where to search, no value
                continue
            if phrase and free(part.start(), part.end()):
                end = start + len(phrase)
                numbered = next((c for c in found if c.kind == "code" and c.start == end + 1), None)
                if numbered is not None and request[end] == " " and phrase == part.group(0):
                    phrase, end = f"{phrase} {numbered.value}", numbered.end  # "Room 4B": a name with its number
                found.append(Candidate(phrase, "phrase", start, end))
                claim(start, end)
            elif phrase and " " in phrase and _opens_with_code(phrase, start, found, free):
                found.append(Candidate(phrase, "phrase", start, start + len(phrase)))  # "Q2 Hiring": a name
                claim(start, start + len(phrase))  # whose first word is code-shaped; the code stays a candidate
    for start, end, text in _ngrams(request, lex):
        if free(start, end):
            found.append(Candidate(text, "ngram", start, end))
    found.sort(key=lambda c: (c.start if c.start >= 0 else 10**6, c.kind == "ngram"))
    for c in found:
        cue, tail = (_cue(request, c.start, lex), _tail(request, c.end, lex)) if c.start >= 0 else ("", "")
        out.add(Candidate(c.value, c.kind, c.start, c.end, cue, tail, c.iso, c.written))
    out.words = list(dict.fromkeys(w for w in WORD.findall(request)))
    return out


def _searched_place(request: str, start: int, end: int, lex: Lexicon) -> bool:
    """The name is the place a search is made in: a place verb before it (a stopword between: "search on")
    and a place tail right after it ("Search Google Books for quantum computing")."""
    before = WORD.findall(request[max(0, start - 40) : start].lower())[-2:]
    after = WORD.findall(request[end : end + 12].lower())[:1]
    if not before or not after or after[0] not in lex.place_tails:
        return False
    return before[-1] in lex.place_verbs or (
        len(before) == 2 and before[0] in lex.place_verbs and before[1] in lex.stopwords
    )


def _opens_with_code(phrase: str, start: int, found: list[Candidate], free: Callable[[int, int], bool]) -> bool:
    """A capitalised run whose first word is a code the request wrote ("Q2 Hiring project") and whose other
    words are free: the whole run is a name too."""
    first = phrase.split()[0]
    opened = any(c.kind == "code" and c.start == start and c.value == first for c in found)
    return opened and free(start + len(first), start + len(phrase))


def _capitalised(lex: Lexicon) -> re.Pattern[str]:
    """Capitalised phrases, the lexicon's small connecting words allowed inside ("Bank of America")."""
    small = "|".join(re.escape(w) for w in sorted(lex.name_connectors)) or "(?!)"
    return re.compile(rf"\b[A-Z][\w'&.-]*(?:\s+(?:{small})\s+[A-Z][\w'&.-]*|\s+[A-Z][\w'&.-]*)*")


def _clock_of(groups: dict[str, str | None], lex: Lexicon) -> str | None:
    hour = int(groups.get("hour") or -1)
    minute = 30 if groups.get("half") else int(groups.get("minute") or 0)
    if groups.get("period") in lex.afternoon_words and hour < 12:
        hour += 12
    return f"{hour:02d}:{minute:02d}" if 0 <= hour <= 23 and 0 <= minute <= 59 else None


def _date_reading(text: str) -> str | None:
    if dates.ISO_DATETIME.fullmatch(text):
        return text[:10]
    if dates.SLASH_DATE.fullmatch(text):
        return dates.slash_iso(text)
    return None


_CLOSING = {"'": "'’", '"': '"”', "“": '”"', "‘": "’'", "「": "」", "『": "』", "《": "》"}


def _pairs(opening: str, closing: str) -> bool:
    return _CLOSING.get(opening, "").find(closing) >= 0


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


def _numbers(request: str, free: Any, lex: Lexicon) -> list[Candidate]:
    out: list[Candidate] = []
    for m in NUMBER.finditer(request):
        if not free(m.start(3), m.end(3) + len(m.group(4) or "")):
            continue
        sign, digits, fraction, suffix = m.group(1), m.group(3).replace(",", ""), m.group(4) or "", m.group(5) or ""
        value: float = float(digits + fraction)
        if sign and (m.start() == 0 or request[m.start() - 1] in " (["):
            value = -value
        scale = {"k": 1000, "thousand": 1000, "million": 1_000_000}.get(suffix.lower(), 1)
        written = _number(value * scale)
        out.append(Candidate(written, "number", m.start(), m.end()))
        if len(digits) >= 6 and not (sign or fraction or suffix or m.group(2) or "," in m.group(3)):
            out.append(Candidate(digits, "code", m.start(3), m.end(3)))  # "payment 8835502392934513": an id
        if suffix in ("%", "percent"):
            out.append(Candidate(_number(round(value / 100, 10)), "number", m.start(), m.end(), written=False))
        elif m.group(2) or "," in m.group(3):
            out.append(Candidate(str(written), "number", m.start(), m.end(), written=False))  # the amount as text
    lower = request.lower()
    edge = r"\b" if lex.segmented else ""
    for word, number in lex.number_words.items():
        for m in re.finditer(rf"{edge}{re.escape(word)}{edge}", lower):
            if free(m.start(), m.end()):
                out.append(Candidate(number, "number", m.start(), m.end()))
    return out


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _sentence_parts(m: re.Match[str]) -> list[re.Match[str]]:
    """A capitalised run split where a sentence ends inside it ("UK. Block"), as matches of the request."""
    pattern = re.compile(r"(?:[^.!?;\s]|[.!?;](?!\s))+(?:\s+(?:[^.!?;\s]|[.!?;](?!\s))+)*[.!?;]?")
    return list(pattern.finditer(m.string, m.start(), m.end()))


def _opens_sentence(request: str, start: int, lex: Lexicon) -> bool:
    """The word at `start` is the first of the request or of one of its sentences."""
    before = request[:start].rstrip(" \t\"'“‘(")
    return not before or before[-1] in lex.sentence_end or before[-1] == "\n"


def _trim_phrase(phrase: str, lex: Lexicon, *, opening: bool = False) -> str:
    """The phrase without the capitalised words that do not start or end a name; one that opens a sentence
    also without the small words and the verb its capital only looked like a name for ("In the Onboarding
    Revamp project" → "Onboarding Revamp", "Move Dune by …" → "Dune")."""
    skip = lex.lead_skip | {m.capitalize() for m in lex.months}
    verbs = lex.action_verbs | lex.lookup_verbs | lex.mutating_verbs
    words = [w.strip(".,;:!?") for w in phrase.split()]
    while words and (words[0] in skip or (opening and len(words) > 1 and (words[0].lower() in lex.stopwords | verbs))):
        words = words[1:]
    while words and (words[-1] in skip or words[-1].lower() in lex.stopwords):
        words = words[:-1]
    return " ".join(words)


def _ngrams(request: str, lex: Lexicon, longest: int = 3) -> Iterable[tuple[int, int, str]]:
    """Content-word n-grams (1..3 words, no stopword or negation at either end: "without" is no value) with
    their character spans."""
    tokens = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"[A-Za-z][A-Za-z'-]*", request)]
    for size in range(longest, 0, -1):
        for i in range(len(tokens) - size + 1):
            window = tokens[i : i + size]
            if any(b[0] - a[1] > 1 for a, b in zip(window, window[1:], strict=False)):
                continue  # not adjacent (punctuation between)
            first, last = window[0][2].lower(), window[-1][2].lower()
            ends = {first, last}
            if ends & (lex.stopwords | lex.negations) or first in lex.action_verbs or len(window[-1][2]) < 2:
                continue
            yield window[0][0], window[-1][1], request[window[0][0] : window[-1][1]]


def _cue(request: str, start: int, lex: Lexicon, words: int = 4) -> str:
    """The last words before a value, lower case; a language with a glossary by its English glosses ("文件
    Hq3ZtR8pLmN1sV" → "file"), so a cue ties a value to an argument's English name in either language."""
    before = request[max(0, start - 48) : start]
    found = re.findall(r"[A-Za-z]+", lex.glossed(before) if not before.isascii() else before)
    return " ".join(w.lower() for w in found[-words:])


def _tail(request: str, end: int, lex: Lexicon) -> str:
    """The first word after a value, when nothing but spaces (or a hyphen) separates them, past a closing
    quote ("the 'Spring Sale' single send"); in a language with a glossary the gloss of the word the value
    modifies ("名为“春季促销”的单次发送" → "single")."""
    after = request[end : end + 24].lstrip("\"'”’」』")
    m = re.match(r"[ \-]?([A-Za-z]+)", after)
    if m:
        return m.group(1).lower()
    word = lex.glossed_word(after.removeprefix("的")) if not after[:1].isascii() else ""
    return word.split()[0].lower() if word else ""


# ranking for one argument ----------------------------------------------------------------------------
def name_tokens(name: str) -> set[str]:
    """`tax_rate` / `taxRate` / `Tax-Rate` → {"tax", "rate"} (and a crude singular of each)."""
    parts = re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", name)
    tokens = {p.lower() for p in parts if p}
    return tokens | {t[:-1] for t in tokens if t.endswith("s") and len(t) > 3}


def ends_in_name(word: str, tokens: set[str]) -> bool:
    """A compound that ends in one of an argument's words (of 4 letters or more) names that argument:
    "bookshelf" names `shelf`."""
    return any(len(t) >= 4 and len(word) > len(t) and word.endswith(t) for t in tokens)


def role_match(cue: str, arg_tokens: set[str], lex: Lexicon) -> bool:
    """The last word before a value is a role word that fits the argument ("from" → origin)."""
    words = cue.split()
    return bool(words) and bool(lex.role_words.get(words[-1], frozenset()) & arg_tokens)


def rank(
    candidates: Sequence[Candidate],
    arg_name: str,
    description: str = "",
    *,
    span: tuple[int, int] | None = None,
    limit: int = 10,
    lex: Lexicon | None = None,
) -> list[Candidate]:
    """Candidates for one argument, best first: cue words naming the argument (or a role word that fits
    it), its name right after the value, inside the step's span, earlier in the request. Derived
    readings keep their source's position. Weights: configs/lexicon/weights.yaml `rank`."""
    lex = lex or lexicon_for("")
    w = weights().rank
    described = {word for word in re.findall(r"[a-z]+", description.lower()) if word not in lex.stopwords}
    wanted = name_tokens(arg_name) | described
    own = name_tokens(arg_name)
    stems = {lex.stem(t) for t in own if len(t) > 2}

    def score(item: tuple[int, Candidate]) -> tuple[float, int]:
        index, c = item
        cue = set(c.cue.split())
        s = w["own_cue"] * len(own & cue) + w["description_cue"] * len((wanted - own) & cue)
        if not own & cue and stems & {lex.stem(word) for word in cue if len(word) > 2}:
            s += w["own_cue"]
        if role_match(c.cue, own, lex):
            s += w["role_cue"]
        if c.tail and (c.tail in own or lex.stem(c.tail) in stems):
            s += w["tail"]
        if span is not None and c.start >= 0:
            s += w["in_step"] if span[0] <= c.start < span[1] else 0.0
        s += w["ngram"] if c.kind == "ngram" else 0.0
        return (-s, index)

    ordered = sorted(enumerate(candidates), key=score)
    return [c for _, c in ordered[:limit]]


def shift_days(iso: str, days: int) -> str | None:
    try:
        return (date.fromisoformat(iso) + timedelta(days=days)).isoformat()
    except ValueError:
        return None

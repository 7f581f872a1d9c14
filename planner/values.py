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

The scan is built from planner/value_patterns.py (the shapes it looks for), planner/literals.py (JSON,
quoted lists, numbers and clocks read as written) and planner/phrases.py (capitalised phrases and
n-grams); what it finds are planner/value_candidates.py's `Candidate`s, ranked for one argument by
planner/value_rank.py. Their public names are importable from here too.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from planner import dates
from planner.lexicon import Lexicon, lexicon_for
from planner.literals import clock_of, date_reading, numbers, pairs, parse_bracketed, plain_number, quoted_lists
from planner.phrases import (
    capitalised,
    ngrams,
    opens_sentence,
    opens_with_code,
    searched_place,
    sentence_parts,
    trim_phrase,
)
from planner.value_candidates import MAX_CANDIDATES, Candidate, RequestValues
from planner.value_patterns import (
    BRACKETS,
    CODE,
    COORDINATES,
    EMAIL,
    EXPRESSION,
    FILENAME,
    HOST,
    NUMBER,
    PHONE,
    QUOTED,
    URL,
    WORD,
)
from planner.value_rank import ends_in_name, name_tokens, rank, role_match

__all__ = [
    "BRACKETS",
    "CODE",
    "COORDINATES",
    "EMAIL",
    "EXPRESSION",
    "FILENAME",
    "HOST",
    "MAX_CANDIDATES",
    "NUMBER",
    "PHONE",
    "QUOTED",
    "URL",
    "WORD",
    "Candidate",
    "RequestValues",
    "ends_in_name",
    "extract",
    "name_tokens",
    "rank",
    "role_match",
    "shift_days",
]


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
        value = parse_bracketed(m.group(0))
        if value is not None:
            found.append(Candidate(value, "list" if isinstance(value, list) else "object", m.start(), m.end()))
            for item in value if isinstance(value, list) else []:
                if isinstance(item, (str, int, float)) and not isinstance(item, bool):
                    found.append(Candidate(item, "quoted" if isinstance(item, str) else "number", m.start(), m.end()))
    for m in QUOTED.finditer(request):
        inner = m.group(2).strip()
        if inner and pairs(m.group(1), m.group(3)):
            iso = date_reading(inner)
            found.append(Candidate(inner, "date" if iso else "quoted", m.start(2), m.end(2), iso=iso or ""))
            claim(m.start(), m.end())
    for start, end, items in quoted_lists(request):
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
            found.append(Candidate(plain_number(float(m.group(1))), "latitude", m.start(1), m.end(1)))
            found.append(Candidate(plain_number(float(m.group(2))), "longitude", m.start(2), m.end(2)))
            claim(m.start(), m.end())
    for pattern in lex.time_patterns:  # a language's own clock ("下午3点半" → 15:30)
        for m in pattern.finditer(request):
            if free(m.start(), m.end()):
                said = clock_of(m.groupdict(), lex)
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
    found += numbers(request, free, lex)
    if lex.naming_words:  # "a tag named blocked-by-legal": the word after a naming word is a name, as written
        naming = "|".join(sorted(lex.naming_words))
        for m in re.finditer(rf"\b(?:{naming})\s+([A-Za-z][\w-]*\w)", request, re.I):
            if m.group(1).lower() not in lex.stopwords and free(m.start(1), m.end(1)):
                found.append(Candidate(m.group(1), "phrase", m.start(1), m.end(1)))
                claim(m.start(1), m.end(1))
    for m in capitalised(lex).finditer(request):
        for part in sentence_parts(m):  # "the UK. Block ...": two sentences, no one phrase
            opening = opens_sentence(request, part.start(), lex)
            phrase = trim_phrase(part.group(0), lex, opening=opening)
            start = request.find(phrase, part.start())
            if " " not in phrase and opens_sentence(request, start, lex):
                continue  # a capital that starts a sentence says nothing ("Block 16:00 ...", "Look up ...")
            if phrase and searched_place(request, start, start + len(phrase), lex):
                claim(start, start + len(phrase))  # "Search Spotify for ...": where to search, no value
                continue
            if phrase and free(part.start(), part.end()):
                end = start + len(phrase)
                numbered = next((c for c in found if c.kind == "code" and c.start == end + 1), None)
                if numbered is not None and request[end] == " " and phrase == part.group(0):
                    phrase, end = f"{phrase} {numbered.value}", numbered.end  # "Room 4B": a name with its number
                found.append(Candidate(phrase, "phrase", start, end))
                claim(start, end)
            elif phrase and " " in phrase and opens_with_code(phrase, start, found, free):
                found.append(Candidate(phrase, "phrase", start, start + len(phrase)))  # "Q2 Hiring": a name
                claim(start, start + len(phrase))  # whose first word is code-shaped; the code stays a candidate
    for start, end, text in ngrams(request, lex):
        if free(start, end):
            found.append(Candidate(text, "ngram", start, end))
    found.sort(key=lambda c: (c.start if c.start >= 0 else 10**6, c.kind == "ngram"))
    for c in found:
        cue, tail = (_cue(request, c.start, lex), _tail(request, c.end, lex)) if c.start >= 0 else ("", "")
        out.add(Candidate(c.value, c.kind, c.start, c.end, cue, tail, c.iso, c.written))
    out.words = list(dict.fromkeys(w for w in WORD.findall(request)))
    return out


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


def shift_days(iso: str, days: int) -> str | None:
    try:
        return (date.fromisoformat(iso) + timedelta(days=days)).isoformat()
    except ValueError:
        return None

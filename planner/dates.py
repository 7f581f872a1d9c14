"""Dates and times: found in a request as written, and written back in the format an argument declares.

Reading: ISO dates and date-times, `MM/DD/YYYY` (US order; `DD/MM` when the first number cannot be a
month), month-name dates ("March 3, 2027", "3rd of March"), relative days ("tomorrow", "next Friday",
"in 3 days") and, per language, the lexicon's own date patterns (Chinese `2027年6月20日`). A year the
request writes is always kept, even when it is in the past; a date written without one is the next such
day on or after today.

Writing: an argument declares its format in its JSON Schema `format` (`date`, `date-time`, `time`), in a
`pattern` of digits, or in its description ("Format: YYYY-MM-DD", "DD/MM/YYYY", "ISO 8601", "Unix
timestamp"); ISO 8601 is the default. `DateFormat.render` writes a date in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from planner.lexicon import Lexicon

ISO_DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w:])")
SLASH_DATE = re.compile(r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b")
# a clock: bounded by what is not a digit (or a letter, for "3pm"), not by \b, which does not fall between
# a digit and a CJK character ("4月8日15:00到16:00")
TIME = re.compile(
    r"(?<![\w.:])(?<![\d])\d{1,2}(?::\d{2})?\s*[AaPp]\.?[Mm](?![A-Za-z])\.?|(?<![\d.:])\d{1,2}:\d{2}(?::\d{2})?(?![\d:])"
)
_ORD = r"(?:st|nd|rd|th)?"
_TIMESTAMP_STANDARDS = frozenset({"3339", "8601"})  # RFC 3339, ISO 8601: a description naming one declares a date-time
_TOKENS = re.compile(r"YYYY|YY|MMMM|MMM|MM|M|DD|D|HH|hh|mm|ss", re.I)
_DESCRIBED = re.compile(r"\b(?:YYYY|YY|DD|MM)(?:[-/. ]?(?:YYYY|YY|MM|DD|M|D))+(?:[T ]HH(?::mm(?::ss)?)?)?\b")


@dataclass(frozen=True)
class FoundDate:
    """A date (and maybe a time) written in the request: its span, the text and its ISO reading."""

    start: int
    end: int
    text: str
    iso: str  # YYYY-MM-DD
    numeric: bool  # written in digits only ("10/05/2023", "2027-03-03"): already a machine format
    counted: bool = False  # "in 30 days": the number stays a value of its own too


def month_patterns(lex: Lexicon) -> tuple[re.Pattern[str], re.Pattern[str]]:
    names = "|".join(sorted(lex.months, key=len, reverse=True)) or "(?!)"
    month_day = re.compile(rf"\b({names})\.?\s+(\d{{1,2}}){_ORD}(?:,?\s+(\d{{4}}))?\b", re.I)
    day_month = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({names})\.?(?:,?\s+(\d{{4}}))?\b", re.I)
    return month_day, day_month


def find_dates(text: str, today: date, lex: Lexicon) -> list[FoundDate]:
    """Every date of `text`, in order of position, spans not overlapping."""
    found: list[FoundDate] = []

    def free(start: int, end: int) -> bool:
        return not any(start < f.end and f.start < end for f in found)

    for m in ISO_DATETIME.finditer(text):
        if _valid(m.group(0)[:10]):
            found.append(FoundDate(m.start(), m.end(), m.group(0), m.group(0)[:10], True))
    for m in SLASH_DATE.finditer(text):
        iso = slash_iso(m.group(0))
        if iso and free(m.start(), m.end()):
            found.append(FoundDate(m.start(), m.end(), m.group(0), iso, True))
    for pattern in lex.date_patterns:
        for m in pattern.finditer(text):
            groups = m.groupdict()
            year = int(groups["year"]) if groups.get("year") else None
            iso = resolve(year, int(groups["month"]), int(groups["day"]), today)
            if iso and free(m.start(), m.end()):
                found.append(FoundDate(m.start(), m.end(), m.group(0), iso, False))
    month_day, day_month = month_patterns(lex)
    for pattern, month_group, day_group in ((month_day, 1, 2), (day_month, 2, 1)):
        for m in pattern.finditer(text):
            month = lex.months[m.group(month_group).lower().rstrip(".")]
            year = int(m.group(3)) if m.group(3) else None
            iso = resolve(year, month, int(m.group(day_group)), today)
            if iso and free(m.start(), m.end()):
                found.append(FoundDate(m.start(), m.end(), m.group(0), iso, False))
    for start, end, written, iso in _relative(text, today, lex):
        if free(start, end):
            found.append(FoundDate(start, end, written, iso, False, any(ch.isdigit() for ch in written)))
    return sorted(found, key=lambda f: f.start)


def _relative(text: str, today: date, lex: Lexicon) -> list[tuple[int, int, str, str]]:
    out: list[tuple[int, int, str, str]] = []
    lower = text.lower()
    edge = r"\b" if lex.segmented else ""
    for phrase, days in sorted(lex.relative_days.items(), key=lambda kv: -len(kv[0])):
        for m in re.finditer(edge + re.escape(phrase.lower()) + edge, lower):
            out.append((m.start(), m.end(), text[m.start() : m.end()], (today + timedelta(days=days)).isoformat()))
    if lex.weekdays:
        names = "|".join(sorted(lex.weekdays, key=len, reverse=True))
        lead = "|".join(sorted(lex.next_words | lex.this_words, key=len, reverse=True)) or "(?!)"
        for m in re.finditer(rf"\b(?:({lead})\s+)?({names})\b", lower):
            if m.group(1) is None and not _capitalised(text, m.start(2)):
                continue  # a bare lowercase "sat" or "sun" is a word, not a weekday
            ahead = (lex.weekdays[m.group(2)] - today.weekday()) % 7
            if m.group(1) in lex.next_words and ahead == 0:
                ahead = 7
            out.append((m.start(), m.end(), text[m.start() : m.end()], (today + timedelta(days=ahead)).isoformat()))
    if lex.in_words and (lex.day_units or lex.week_units):
        units = "|".join(sorted(lex.day_units | lex.week_units, key=len, reverse=True))
        ins = "|".join(sorted(lex.in_words))
        for m in re.finditer(rf"\b(?:{ins})\s+(\d{{1,3}})\s+({units})\b", lower):
            days = int(m.group(1)) * (7 if m.group(2) in lex.week_units else 1)
            out.append((m.start(), m.end(), text[m.start() : m.end()], (today + timedelta(days=days)).isoformat()))
    return out


def _capitalised(text: str, index: int) -> bool:
    return index < len(text) and text[index].isupper()


def _valid(iso: str) -> bool:
    try:
        date.fromisoformat(iso)
    except ValueError:
        return False
    return True


def resolve(year: int | None, month: int, day: int, today: date) -> str | None:
    """ISO date of year/month/day; without a year, the next such day on or after today."""
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


def slash_iso(text: str) -> str | None:
    """`MM/DD/YYYY` (US order; `DD/MM` when the first number cannot be a month)."""
    a, b, y = (int(p) for p in text.split("/"))
    year = y + 2000 if y < 100 else y
    month, day = (a, b) if a <= 12 else (b, a)
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def time_normal(text: str) -> str | None:
    """`7 pm` → `7:00 PM`, `19:30` → `19:30` (the request's own clock)."""
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s*([AaPp])?\.?([Mm])?\.?", text.strip())
    if not m:
        return None
    hour, minute = int(m.group(1)), m.group(2) or "00"
    if m.group(3):
        return f"{hour}:{minute} {m.group(3).upper()}M"
    return f"{hour:02d}:{minute}"


def time_24h(text: str) -> str | None:
    """Any time reading as `HH:MM` on a 24-hour clock."""
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s*([AaPp])?\.?([Mm])?\.?", text.strip())
    if not m:
        return None
    hour, minute = int(m.group(1)), int(m.group(2) or 0)
    if m.group(3):
        hour = hour % 12 + (12 if m.group(3).lower() == "p" else 0)
    if hour > 23 or minute > 59:
        return None
    return f"{hour:02d}:{minute:02d}"


# -- declared formats ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DateFormat:
    """How an argument wants a date written: `kind` date | datetime | time | epoch, and a layout of
    tokens (YYYY, MM, DD, HH, mm, ss) when one is declared."""

    kind: str
    layout: str = ""
    declared: bool = True  # False: ISO 8601 by default, nothing was declared
    text: bool = False  # an epoch written as a string of digits (the argument is a string)

    def render(self, iso: str, clock: str | None = None, zone: str = "") -> str | int | None:
        """The date `iso` (and the time `clock`, HH:MM, at UTC offset `zone`: "Z", "+08:00" or "" when the
        request states none) in this format; None when it cannot be written."""
        try:
            day = date.fromisoformat(iso[:10]) if iso else None
        except ValueError:
            return None
        hour, minute = (int(p) for p in (clock or "00:00").split(":")[:2])
        if self.kind == "time":
            return self._layout(datetime(2000, 1, 1, hour, minute), self.layout or "HH:mm")
        if day is None:
            return None
        moment = datetime(day.year, day.month, day.day, hour, minute)
        if self.kind == "epoch":
            seconds = int((moment - datetime(1970, 1, 1)).total_seconds())
            return str(seconds) if self.text else seconds
        if self.layout:
            return self._layout(moment, self.layout)
        if self.kind == "datetime":
            return moment.strftime("%Y-%m-%dT%H:%M:%S") + zone
        return day.isoformat()

    @staticmethod
    def _layout(moment: datetime, layout: str) -> str:
        table = {"YYYY": "%Y", "YY": "%y", "MMMM": "%B", "MMM": "%b", "MM": "%m", "DD": "%d", "HH": "%H", "hh": "%I"}
        table |= {"mm": "%M", "ss": "%S"}

        def token(m: re.Match[str]) -> str:
            word = m.group(0)
            if word in ("M", "D"):
                return str(moment.month if word == "M" else moment.day)
            key = word if word in table else word.upper()
            return moment.strftime(table.get(key, word))

        return _TOKENS.sub(token, layout)


def _zone_pattern(lex: Lexicon) -> re.Pattern[str]:
    """A stated UTC offset: a zone word with or without an offset ("UTC", "GMT-5", "UTC+08:00"), or an offset
    right after a clock, bracketed or not ("23:59 (+01:00)", "10:00+02:00")."""
    zones = "|".join(sorted(lex.zone_words)) or "(?!)"
    return re.compile(
        rf"(?<![A-Za-z])(?:{zones})(?:\s*([+-]\d{{1,2}})(?::?(\d{{2}}))?)?(?![A-Za-z])"
        rf"|(?<=\d:\d\d)\s*[(（]?\s*([+-]\d{{2}}):?(\d{{2}})\s*[)）]?"
    )


def zone_spans(text: str, lex: Lexicon) -> list[tuple[int, int]]:
    """Where `text` states a UTC offset (its clock-like "08:00" is not a time of the request)."""
    return [m.span() for m in _zone_pattern(lex).finditer(text)]


def stated_zone(text: str, lex: Lexicon) -> str:
    """The UTC offset a request states: "UTC"/"GMT" → "Z", "UTC+08:00" and "23:59 (+01:00)" → "+08:00" and
    "+01:00"; "" when none."""
    m = _zone_pattern(lex).search(text)
    if m is None:
        return ""
    sign = m.group(1) or m.group(3)
    if sign is None:
        return "Z"
    hours = int(sign)
    minutes = m.group(2) if m.group(1) else m.group(4)
    return f"{'+' if hours >= 0 and not sign.startswith('-') else '-'}{abs(hours):02d}:{minutes or '00'}"


_EPOCH_EXAMPLE = re.compile(r"\b(?:example|e\.g\.|such as)\W{0,3}(\d{9,11})\b", re.I)


def _digits_timestamp(schema: dict[str, Any], description: str) -> bool:
    """A string the description calls a timestamp and shows as 9 to 11 digits: seconds since the epoch."""
    if "timestamp" not in description.lower():
        return False
    example = schema.get("example")
    if example is not None:
        return bool(re.fullmatch(r"\d{9,11}", str(example)))
    return bool(_EPOCH_EXAMPLE.search(description))


def declared_format(schema: dict[str, Any], kind_hint: str, lex: Lexicon) -> DateFormat | None:
    """The date format an argument declares, or the ISO default for a date-like argument (`kind_hint`
    date/datetime/time from its name); None for an argument that takes no date."""
    fmt = str(schema.get("format", ""))
    kind = str(schema.get("type", "string"))
    if fmt in ("date", "date-time", "time"):
        return DateFormat({"date": "date", "date-time": "datetime", "time": "time"}[fmt])
    pattern = str(schema.get("pattern", ""))
    if re.fullmatch(r"\^?(?:\[0-9\]|\\d)\{4\}-(?:\[0-9\]|\\d)\{2\}-(?:\[0-9\]|\\d)\{2\}\$?", pattern):
        return DateFormat("date", "YYYY-MM-DD")
    description = str(schema.get("description", ""))
    if kind in ("integer", "number") and {w.lower() for w in re.findall(r"[A-Za-z]+", description)} & lex.epoch_words:
        # (a number named for a date, or one its description shows as seconds since the epoch: Intercom's
        # `created_at_after`, "It must be formatted as a unix timestamp. Example: 1527811200.")
        return DateFormat("epoch") if kind_hint or _digits_timestamp(schema, description) else None
    if kind not in ("string", "") and kind_hint:
        return None
    if kind in ("string", "") and _digits_timestamp(schema, description):
        return DateFormat("epoch", text=True)  # "Timestamp to start metric window. Example: 1620683817."
    layout = _DESCRIBED.search(description)
    if layout is not None:
        text = layout.group(0)
        return DateFormat("datetime" if "HH" in text else "date", text)
    words = {w.lower() for w in re.findall(r"[A-Za-z0-9]+", description)}
    if words & lex.iso_words and kind_hint:
        return DateFormat(kind_hint)
    if kind in ("string", "") and words & _TIMESTAMP_STANDARDS:  # "RFC 3339 timestamp to restrict to …"
        return DateFormat("datetime")
    if kind_hint:
        return DateFormat(kind_hint, declared=False)
    return None

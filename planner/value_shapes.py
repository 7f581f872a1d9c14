"""What a request value looks like, whatever found it, and which argument kinds it may fill.

A quoted '123-456-7890' is a phone number, a quoted 'A-42' a code; an identifier takes id-shaped values
(never quoted words: a name), an e-mail, URL or phone argument only values of its shape, and free text
the textual kinds (planner/evidence.py decides which of them an argument is offered).
"""

from __future__ import annotations

import re
from typing import Any

from planner.argkinds import ArgKind
from planner.lexicon import Lexicon
from planner.values import FILENAME, Candidate, RequestValues

ID_SHAPES = ("code", "quoted", "email", "url", "phone", "number")  # what an identifier may look like
TEXT_KINDS = ("quoted", "phrase", "code", "ngram", "email", "url", "phone", "expression", "filename")
ADDRESS_KINDS = frozenset({"email", "phone", "url"})  # values that address something: a mailbox, a line, a page
TIMED_KINDS = frozenset({"date", "datetime", "time"})  # candidates that are a date, a moment or a clock

_SHAPES = (
    ("email", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("url", re.compile(r"(?:https?://|www\.)\S+|[\w-]+(?:\.[\w-]+)+/\S*")),
    ("phone", re.compile(r"\+?[\d\s().-]{7,20}")),
)


def shape(c: Candidate) -> str:
    """What a value looks like whatever found it: a quoted '123-456-7890' is a phone number."""
    if c.kind in ("email", "url", "phone", "code", "filename"):  # (a file's name is a name: never an id)
        return c.kind
    if c.iso and c.kind in TIMED_KINDS:  # "2027-01-19" is a date, not a phone number or an id
        return c.kind
    if c.is_number:
        return "number"
    text = str(c.value).strip() if c.is_string else ""
    if written := written_shape(text):
        return written
    if c.kind == "quoted" and FILENAME.fullmatch(text):  # 'report_2025.pdf': a file's name
        return "filename"
    if c.kind == "quoted" and " " not in text and any(ch.isdigit() for ch in text):
        return "code"
    return c.kind


def written_shape(text: str) -> str | None:
    """ "email", "url" or "phone" when the text is written as one (a phone number has 7 digits at least)."""
    for kind, pattern in _SHAPES:
        if pattern.fullmatch(text) and (kind != "phone" or sum(ch.isdigit() for ch in text) >= 7):
            return kind
    return None


# an absolute URI of a scheme with parts (RFC 3986 `scheme:path`): `spotify:track:4iV5W…`, `urn:isbn:0451450523`;
# two colons at least, so that `team:payments` or `d:bio-10` stay codes
_URN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:[^\s:]+:\S+")


def shaped_as(c: Candidate, kind: ArgKind) -> bool:
    """The value has the shape an identifier, e-mail, URL or phone argument takes (a URI argument also takes
    an absolute URI of another scheme than the web's)."""
    found = shape(c)
    if kind.kind == "url" and found == "code" and _URN.fullmatch(str(c.value)):
        return True
    if kind.kind == "phone" and re.fullmatch(r"\+?\d{7,15}", str(c.value)):
        return True  # "the phone number 1234567890": digits alone, read as a number and a code
    if kind.is_identifier:  # quoted words ("'Design review'") are a name, never an id
        return (found in ID_SHAPES and found != "quoted") or (c.is_number and float(c.value).is_integer())
    return found == kind.kind


def examples_allow(c: Candidate, schema: dict[str, Any]) -> bool:
    """An e-mail address or URL fills an identifier whose schema shows examples only when one of them is one
    too (Intercom's `contact_id`, "Example: 63a07ddf05a32042dffac965", takes the id a search by the address
    finds, never the address; Google's `calendarId`, with no example, takes "team@group.calendar.google.com")."""
    found = shape(c)
    if found not in ("email", "url"):
        return True
    examples = schema.get("examples")
    shown = list(examples) if isinstance(examples, list) else []
    if "example" in schema:
        shown.append(schema["example"])
    shown = [str(e) for e in shown if isinstance(e, (str, int, float))]
    if not shown:
        return True
    return any(written_shape(e.strip()) == found for e in shown)


# what an identifier's description says it identifies: "A comma separated list of node IDs" → node
_ID_OF = re.compile(r"([A-Za-z]+)[\s-]+(?:ids?|identifiers?)\b", re.IGNORECASE)
_CLOCK_SHAPED = re.compile(r"\d{1,6}:\d{1,6}")


def identified_things(schema: dict[str, Any], lex: Lexicon) -> frozenset[str]:
    """The stems of the things an identifier's description names it the id of ("node IDs" → node)."""
    words = (m.group(1).lower() for m in _ID_OF.finditer(str(schema.get("description") or "")))
    return frozenset(lex.stem(w) for w in words if w not in lex.stopwords)


def clock_named_id(c: Candidate, things: frozenset[str], lex: Lexicon) -> bool:
    """A clock-shaped value written right after the word for what the identifier identifies is that id, no
    time ("Export nodes 12:34 and 12:35", "节点 4:17": Figma's node ids): the word is the last before the
    value, or the last before a connective that joins it to the one before ("nodes 12:34 and 12:35")."""
    if not things or c.kind != "time" or not c.written or not _CLOCK_SHAPED.fullmatch(str(c.value)):
        return False
    cue = c.cue.split()
    last = cue[-2:] if len(cue) > 1 and cue[-1] in lex.name_connectors else cue[-1:]
    return bool(last) and lex.stem(last[0]) in things


def named_only(c: Candidate) -> bool:
    """A value that is an identifier only when the request names it one: a bare number, quoted words."""
    return c.is_number or (c.kind == "quoted" and shape(c) == "quoted")


def opens_name(c: Candidate, values: RequestValues) -> bool:
    """A code that is the first word of a capitalised name ("Q2" of "the Q2 Hiring project"): no identifier."""
    return c.kind == "code" and any(
        p.kind == "phrase" and p.start == c.start and p.end > c.end for p in values.candidates
    )


def fits_type(c: Candidate, kind: ArgKind) -> bool:
    """The value can fill an argument of this kind as free text, a number, a list or an object."""
    if kind.kind == "array":
        return isinstance(c.value, list)
    if kind.kind == "object":
        return isinstance(c.value, dict)
    return (c.is_string and c.kind in TEXT_KINDS) or (c.is_number and c.written)  # "3-day" → "3"


def numeric(value: Any) -> bool:
    """Written in digits and date or clock separators only ("10/05/2023", "2022-12-01 10:00")."""
    return isinstance(value, str) and bool(re.fullmatch(r"[\d/.\-: T]+", value))


def number_of(option: Any) -> float | None:
    """An enum option's number, whether the schema lists it as a number or as digits (never a boolean)."""
    if isinstance(option, bool):
        return None
    if isinstance(option, (int, float)):
        return float(option)
    if isinstance(option, str) and re.fullmatch(r"-?\d+(?:\.\d+)?", option):
        return float(option)
    return None

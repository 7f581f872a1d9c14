"""What kind of value an argument takes, read from its JSON Schema, its name and its description.

The kind decides which request values may fill it and in what form (planner/evidence.py): a date
argument takes dates written in its declared format (planner/dates.py), an identifier takes ids (codes,
numbers, quoted text, an earlier output) and never a name, a number takes numbers. Names are read in
any naming style (`customerId`, `customer_id`, `customer-id`), with the words of the English lexicon
(argument names are English in practice, whatever the request's language).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from planner.dates import DateFormat, declared_format
from planner.lexicon import Lexicon, lexicon

_WORDS_OF_NAME = "en"
_ISO_EXAMPLE = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


@dataclass(frozen=True)
class ArgKind:
    """`kind`: date, datetime, time, epoch, identifier, email, url, phone, number, integer, boolean, enum,
    array, object or text; `date_format` for the date kinds."""

    kind: str
    date_format: DateFormat | None = None

    @property
    def is_date(self) -> bool:
        return self.date_format is not None

    @property
    def is_identifier(self) -> bool:
        return self.kind == "identifier"


def ordered_tokens(name: str) -> list[str]:
    """`originLocationCode` → ["origin", "location", "code"] (the words of a name, in order, lower case)."""
    parts = re.split(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", name)
    return [p.lower() for p in parts if p]


def dateish(arg: str, schema: dict[str, Any], lex: Lexicon | None = None) -> bool:
    """The argument takes a date: its format says so, or the last word of its name is a date word
    (`startDate`, `deadline`) or ends in "date" (`birthdate`); `number_of_days` and `dueDays` are counts."""
    lex = lex or lexicon(_WORDS_OF_NAME)
    if str(schema.get("format", "")).startswith("date"):
        return True
    words = ordered_tokens(arg)
    last = words[-1] if words else ""
    return last in lex.date_words or (last.endswith("date") and len(last) > 6)


def timeish(arg: str, lex: Lexicon | None = None) -> bool:
    """The last word of the name is a time word (`departure_time`; not `time_zone`)."""
    lex = lex or lexicon(_WORDS_OF_NAME)
    words = ordered_tokens(arg)
    return bool(words) and words[-1] in lex.time_words


def identifier_like(arg: str, schema: dict[str, Any], lex: Lexicon | None = None) -> bool:
    """The argument names an identifier: its last word is one (`customerId`, `order_uuid`), its format is
    `uuid`, its description opens by saying it is one ("Globally unique identifier for the project." of
    Asana's `project_gid`), or its examples are all numerals (and its name is no phone number or the like)."""
    lex = lex or lexicon(_WORDS_OF_NAME)
    if schema.get("format") == "uuid":
        return True
    tokens = ordered_tokens(arg)
    named = bool(tokens) and (tokens[-1] in lex.identifier_words or described_identifier(schema, lex))
    return named or (
        bool(tokens) and _digit_examples(schema) and not any(tokens[-1] in w for w in lex.kind_words.values())
    )


def _digit_examples(schema: dict[str, Any]) -> bool:
    """A string argument whose examples are all numerals of three digits or more (Asana's `project`: "The
    project to create the section in", example "13579"; `workspace`, `parent`, `team`): it takes the
    thing's id, not its name."""
    examples = schema.get("examples")
    examples = examples if isinstance(examples, list) else [schema["example"]] if "example" in schema else []
    return (
        schema.get("type") == "string"
        and bool(examples)
        and all(isinstance(e, str) and len(e) >= 3 and e.isdigit() for e in examples)
    )


_ID_OPENING = re.compile(r"^\W*(?:(?:the|a|an|globally|universally|unique|numeric|string)\s+){0,3}(\w+)\b", re.I)


_IDENTIFIES = re.compile(r"^[^.]*\b(?:uniquely )?identif(?:y|ies) (?:this|the|a|an) ", re.I)


def described_identifier(schema: dict[str, Any], lex: Lexicon) -> bool:
    """The description's opening noun phrase is an identifier ("The unique identifier of the domain record.",
    "Globally unique identifier for the task."), or its first sentence says the value identifies the thing
    ("A 34 character string that uniquely identifies this resource.", Twilio's `Sid`): what the argument's
    name calls it (`gid`, `key`, `Sid`) notwithstanding."""
    description = str(schema.get("description", ""))
    opening = _ID_OPENING.match(description)
    named = opening is not None and opening.group(1).lower() in lex.identifier_words | {"identifier"}
    return named or bool(_IDENTIFIES.match(description))


_OPTIONS_INTRO = re.compile(
    r"\b(?:(?:possible|valid|acceptable|allowed|supported) values(?: are)?|(?:are|is) (?:currently )?allowed)\s*:",
    re.IGNORECASE,
)
_QUOTED_ITEM = re.compile(r"(?:^|\s)[-*]\s+[\"`']([A-Za-z][\w.-]*)[\"`']")
_BARE_ITEM = re.compile(r"(?:^|\s)[-*]\s+([A-Za-z][\w.-]*)")
_TICKED_ITEM = re.compile(r"`([A-Za-z][\w.-]*)`")  # "Valid values: `long_term` (…), `medium_term` (…)"
_DEFAULT = re.compile(r"\bdefault\b", re.IGNORECASE)


def described_options(schema: Any) -> tuple[str, ...]:
    """The values a string's description lists as the allowed ones, where the schema has no `enum`
    ("Valid values are: - user - group - domain", "Possible values are: - \"reader\" - Provides read
    access…"): Google's discovery documents list them so. Empty when it lists none (or phrases)."""
    if not isinstance(schema, dict) or "enum" in schema or schema.get("type") not in ("string", None):
        return ()
    description = str(schema.get("description", ""))
    intro = _OPTIONS_INTRO.search(description)
    if intro is None:
        return ()
    rest = description[intro.end() : intro.end() + 1500]
    listed = rest[: m.start()] if (m := _DEFAULT.search(rest)) else rest  # (not the default named after them)
    items = _QUOTED_ITEM.findall(rest) or _BARE_ITEM.findall(rest) or _TICKED_ITEM.findall(listed)
    options = tuple(dict.fromkeys(items))
    return options if len(options) >= 2 else ()


def option_glosses(schema: Any, options: tuple[str, ...] | list[str]) -> dict[str, str]:
    """What the description says each option means, in parentheses right after it ("`short_term`
    (approximately last 4 weeks)", "`asc` (ascending order)"); options it does not explain are left out."""
    description = str(schema.get("description", "")) if isinstance(schema, dict) else ""
    glosses: dict[str, str] = {}
    for option in options:
        if not isinstance(option, str) or not option:
            continue
        m = re.search(rf"[`\"']?{re.escape(option)}[`\"']?\s*\(([^()]{{3,160}})\)", description)
        if m is not None:
            glosses[option] = m.group(1)
    return glosses


def names_kind(text: str, kind: str) -> bool:
    """The text names a value kind by one of the lexicon's `kind_words` ("the email address of the user")."""
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", text)}
    return bool(words & lexicon(_WORDS_OF_NAME).kind_words.get(kind, frozenset()))


def classify(arg: str, schema: Any) -> ArgKind:
    """The kind of value `arg` takes (schema: its JSON Schema; anything else counts as untyped)."""
    lex = lexicon(_WORDS_OF_NAME)
    schema = schema if isinstance(schema, dict) else {}
    for key in ("anyOf", "oneOf"):  # "a string, or a list of them": read as its first typed option
        options = [o for o in schema.get(key) or [] if isinstance(o, dict) and o.get("type") not in (None, "null")]
        if options and "type" not in schema:
            schema = {**{k: v for k, v in schema.items() if k != key}, **options[0]}
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if "enum" in schema or described_options(schema):
        return ArgKind("enum")
    if kind in ("boolean", "array", "object"):
        return ArgKind(str(kind))
    hint = ""
    words = ordered_tokens(arg)
    described = str(schema.get("description", ""))
    if timeish(arg, lex) and str(schema.get("format", "")) == "date-time":
        hint = "datetime"
    elif len(words) > 1 and words[-1] in lex.datetime_tails or _ISO_EXAMPLE.search(described):
        hint = "datetime"  # `send_at`, or a description showing a date-time ("e.g. 2024-08-05T11:52:01Z")
    elif dateish(arg, schema, lex):
        hint = "date"
    elif timeish(arg, lex):
        hint = "time"
    fmt = declared_format(schema, hint, lex)
    if fmt is not None:
        return ArgKind(fmt.kind, fmt)
    if kind in ("integer", "number"):
        return ArgKind(str(kind))
    if identifier_like(arg, schema, lex):
        return ArgKind("identifier")
    fmt_name = str(schema.get("format", ""))
    last = words[-1] if words else ""
    before = words[-2] if len(words) > 1 and last in lex.kind_tails else ""
    said = [w.lower() for w in re.findall(r"[A-Za-z]+", described)]
    for value_kind, names in lex.kind_words.items():
        plural = last.endswith("s") and last[:-1] in names  # `uris`, `emails`: a list of that kind
        if fmt_name in (value_kind, "uri" if value_kind == "url" else value_kind) or last in names or plural:
            return ArgKind(value_kind)
        if before in names:  # `phoneNumber`, `emailAddress`
            return ArgKind(value_kind)
        if any(a == value_kind and b in lex.kind_tails for a, b in zip(said, said[1:], strict=False)):
            return ArgKind(value_kind)  # "Recipient email address."
    return ArgKind("text")

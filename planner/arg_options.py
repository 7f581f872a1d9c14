"""What one argument of one node may be written with (`ArgOptions`, decided by planner/evidence.py), and
the rules that settle a node's options against each other once each argument has its own: one word
naming options of two enums sets neither, a value a required argument alone takes is not also an
optional one's; which arguments a schema keeps for the service (deprecated, read-only); which required
ones nothing can fill."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from planner.argkinds import ArgKind, ordered_tokens


@dataclass(frozen=True)
class ArgOptions:
    """What one argument of one node may be written with.

    `typed`: `values` replace the request's generic candidates in the grammar (dates, identifiers,
    mapped enums, flags, evidence of an optional argument); `closed`: nothing else may be written (no
    free-value detour); `refs`: the only references offered when not empty (a lookup's output)."""

    name: str
    required: bool
    kind: ArgKind
    values: tuple[Any, ...] = ()
    refs: tuple[str, ...] = ()
    typed: bool = False
    closed: bool = False
    supported: bool = True
    missing: str | None = None
    unwritable: bool = False  # deprecated, or the service's own (read-only): never written, whatever is said


def one_option_one_argument(out: dict[str, ArgOptions], heard: Callable[[str], int]) -> None:
    """A word that names an option of two optional enums ("full details": `filter: full` and
    `projection: FULL`) does not say which one it sets: only the argument whose own name the request says
    more of than the others' (`heard`: how many words of an argument's name the request uses: "hide it from
    the label list" → `labelListVisibility: labelHide`, not also `messageListVisibility: hide`), else
    neither. The word is the option's own words less those repeating its argument's name."""
    named: dict[tuple[str, ...], list[str]] = {}
    for arg, options in out.items():
        if options.kind.kind == "enum" and not options.required and len(options.values) == 1:
            own = set(ordered_tokens(arg.rpartition(".")[2]))
            words = [w for w in ordered_tokens(str(options.values[0])) if w not in own]
            named.setdefault(tuple(words or ordered_tokens(str(options.values[0]))), []).append(arg)
    for args in named.values():
        if len(args) < 2:
            continue
        counts = {arg: heard(arg) for arg in args}
        best = max(counts.values())
        kept = [arg for arg in args if counts[arg] == best]
        for arg in args:
            if len(kept) > 1 or arg not in kept:
                out[arg] = replace(out[arg], values=(), typed=True, closed=True, supported=False)


def one_date_one_field(out: dict[str, ArgOptions], schemas: Mapping[str, Any], *, clock: bool) -> None:
    """Two optional fields for one moment, a date-only and a date-time one (Asana's `due_on` and `due_at`,
    `start_on` and `start_at`, `due_on_before` and `due_at_before`: their names differ in one word), both
    offered the request's date: a date said without a clock (`clock`: the step says a time of day) is the
    date-only field's, one with a clock the date-time field's; the other field is not written. A field is a
    date-time one by its kind, its examples ("2019-09-15T02:06:58.147Z") or a description of a "date and
    time" (Asana declares `due_at` `format: date`)."""
    dated = {arg: o for arg, o in out.items() if o.kind.is_date and not o.required and o.supported and o.values}

    def timed(arg: str) -> bool:
        schema = schemas.get(arg)
        schema = schema if isinstance(schema, Mapping) else {}
        examples = (
            [str(e) for e in schema.get("examples", ()) if isinstance(e, str)]
            if isinstance(schema.get("examples"), list)
            else []
        )
        return (
            out[arg].kind.kind == "datetime"
            or any(_CLOCK_EXAMPLE.search(e) for e in examples)
            or "date and time" in str(schema.get("description", "")).lower()
        )

    for arg, options in dated.items():
        if len(ordered_tokens(arg)) < 2 or not timed(arg):
            continue
        days = {str(v)[:10] for v in options.values}
        for twin, other in dated.items():
            if twin == arg or not _one_word_apart(arg, twin) or timed(twin):
                continue
            if not days <= {str(v)[:10] for v in other.values}:
                continue  # not the same date: two moments
            loser = twin if clock else arg
            out[loser] = replace(out[loser], values=(), typed=True, closed=True, supported=False)
            break


def _one_word_apart(a: str, b: str) -> bool:
    """Two names of as many words that differ in one of them: `due_on`/`due_at`, `due_on_before`/`due_at_before`."""
    x, y = ordered_tokens(a), ordered_tokens(b)
    return len(x) == len(y) and sum(1 for p, q in zip(x, y, strict=True) if p != q) == 1


_CLOCK_EXAMPLE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


def one_thing_one_id(out: dict[str, ArgOptions], things: Mapping[str, frozenset[str]]) -> None:
    """Two identifiers of one node that name the same thing (`things`: argument → stems of the thing it
    names; Asana's path `project_gid` and body `data.project`) take the same value: the one a lookup or an
    earlier node gives the first, when the other has no reference of its own. Two optional ones are no
    twins: YouTube's `snippet.channelId`, `snippet.resourceId.channelId` and `subscriberSnippet.channelId`
    are three channels (the subscriber's, the one subscribed to, …), one of which the request names."""
    for arg, options in out.items():
        if not options.kind.is_identifier or options.refs or not things.get(arg):
            continue
        twin = next(
            (
                o
                for a, o in out.items()
                if a != arg
                and o.kind.is_identifier
                and o.refs
                and things.get(a) == things[arg]
                and (o.required or options.required)
            ),
            None,
        )
        if twin is not None:
            out[arg] = replace(
                options, values=(), refs=twin.refs, typed=True, closed=True, supported=True, missing=None
            )


def plain_text_not_markup(out: dict[str, ArgOptions], markup: frozenset[str], plain: frozenset[str]) -> None:
    """Text without markup offered to a markup argument (`markup`: words naming a markup format, e.g. html)
    that has a plain counterpart in the same object — its name without the markup word, give or take words
    that say plain (`responseBodyHtml` / `responseBodyPlainText`, `data.html_notes` / `data.notes`, `html` /
    `text`) — is the counterpart's: the markup argument is not written with it, and the counterpart takes it
    when it has no value of its own; text with markup offered to both is the markup argument's."""
    for arg, options in out.items():
        if options.required or not options.values or options.kind.kind != "text":
            continue
        parent, _, field = arg.rpartition(".")
        words = ordered_tokens(field)
        if not set(words) & markup:
            continue
        rest = {w for w in words if w not in markup}
        twins = [
            a
            for a, o in out.items()
            if a != arg
            and a.rpartition(".")[0] == parent
            and o.kind.kind == "text"
            and not set(ordered_tokens(a.rpartition(".")[2])) & markup
            and rest <= (own := set(ordered_tokens(a.rpartition(".")[2])))
            and own - rest <= plain
        ]
        kept = tuple(v for v in options.values if not isinstance(v, str) or _MARKUP.search(v))
        if not twins:
            continue
        twin = out[twins[0]]
        if kept and any(v in kept for v in twin.values):  # text with markup is the markup argument's
            rest_values = tuple(v for v in twin.values if v not in kept)
            out[twins[0]] = twin = replace(
                twin, values=rest_values, typed=True, closed=True, supported=bool(rest_values)
            )
        if len(kept) == len(options.values):
            continue
        out[arg] = replace(options, values=kept, typed=True, closed=True, supported=bool(kept))
        if not twin.values and not twin.refs and not twin.unwritable:  # (placed there as untied content)
            moved = tuple(v for v in options.values if v not in kept)
            out[twins[0]] = replace(twin, values=moved, typed=True, closed=True, supported=True)


_MARKUP = re.compile(r"<[A-Za-z!/][^<>]*>")


def taken_by_required(out: dict[str, ArgOptions]) -> None:
    """A value that is the only one a required argument takes ("Archive the course d:art-12": `id`) is
    that argument's, not also an optional one's (`name`)."""
    taken = {
        json.dumps(o.values[0], sort_keys=True)
        for o in out.values()
        if o.required and o.closed and len(o.values) == 1 and not o.refs
    }
    for arg, options in out.items():
        if options.required or not options.values:
            continue
        if all(json.dumps(v, sort_keys=True) in taken for v in options.values):
            out[arg] = replace(options, values=(), typed=True, closed=True, supported=False)


def one_value_one_name(out: dict[str, ArgOptions]) -> None:
    """A value said once names one thing: of two optional arguments offered the same sole value, where one's
    name is the other's with more words (`channelTitle` against `title`: the more words name another thing,
    "the channel title of the channel that the video belongs to"), only the plainer keeps it ("a playlist
    called 'Road trip 2027'" → `snippet.title`, not also `snippet.channelTitle`)."""
    sole = {
        arg: (json.dumps(o.values[0], sort_keys=True), set(ordered_tokens(arg.rpartition(".")[2])))
        for arg, o in out.items()
        if not o.required and o.closed and len(o.values) == 1 and not o.refs and isinstance(o.values[0], str)
    }
    for arg, (value, words) in sole.items():
        if any(a != arg and v == value and w < words for a, (v, w) in sole.items()):
            out[arg] = replace(out[arg], values=(), typed=True, closed=True, supported=False)


# a sentence that says the service writes the value: it opens with "Read-only"/"Output only", or says so of
# the field itself ("This field is read-only.", "This is a read-only field assigned by the server.", "This
# read-only property …"); not when the sentence goes on with an exception ("Read-only, except when importing
# an event", "read-only for all operations except create"): then some request may write it
_OUTPUT_ONLY = re.compile(
    r"(?:^|[.!]\s+)\W?(?:read-only|output only|this (?:\w+ )?is (?:an? )?read-only|this read-only)\b"
    r"(?![^.]*\bexcept\b)",
    re.IGNORECASE,
)
# a credential the connection supplies, never the request (Google's `access_token`: "OAuth access token.",
# `key`: "API key. …"): what the description opens with, for an argument named like one
_CREDENTIAL = re.compile(
    r"^\s*(?:the |an? |your )?(?:oauth(?: 2\.0)?(?: access)? token|api key|access token|bearer token"
    r"|auth(?:entication|orization)? token|client secret)\b",
    re.IGNORECASE,
)
_CREDENTIAL_NAMES = re.compile(r"token|key|secret|auth", re.IGNORECASE)


def unwritable(schema: Mapping[str, Any], name: str = "") -> bool:
    """The schema marks the argument deprecated (`deprecated: true`, or a description that opens with
    "Deprecated", as OpenAPI documents and the importer write it) or as the service's to write (`readOnly`,
    or a sentence of its description that says so without an exception, as Google's do: a course's
    `courseGroupEmail`, an attendee's `organizer`, a task's `parent`: "This field is read-only."), or
    `name` (its last field: `body.key` → `key`) is a credential the connection supplies (described as an
    OAuth token or API key: "delegate access to my mailbox" is no `access_token`)."""
    field = name.rpartition(".")[2]
    description = schema.get("description")
    described = isinstance(description, str) and (
        description.lstrip().lower().startswith("deprecated")
        or bool(_OUTPUT_ONLY.search(description))
        or bool(field and _CREDENTIAL_NAMES.search(field) and _CREDENTIAL.match(description))
    )
    return schema.get("deprecated") is True or schema.get("readOnly") is True or described


def missing_inputs(options: Mapping[str, ArgOptions]) -> dict[str, str]:
    """Argument → why it is missing, for the required arguments nothing can fill."""
    return {name: o.missing for name, o in options.items() if o.required and o.missing}

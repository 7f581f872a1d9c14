"""Data flow the proposal adds before a tool: the tools whose outputs its required arguments need.

Two rules, both from the catalog's own schemas (no domain):

1. **Majority**: a tool whose required arguments are mostly fields that only another tool outputs
   ("reserve" needs the `car_id` and `car_type` that "search" returns) gets that tool before it.
2. **Lookups** (planner/lookups.py): a required argument that is an identifier (`customerId`), a code
   another tool's output field answers (an "IATA code" ← `iataCode`), a number another tool outputs
   under the same name (`latitude`), or an argument ending in one of `prerequisite_identifiers`
   (`stylist_name`) that another tool outputs by that name, gets its producer before it — unless the
   request itself gives a value of the right shape (an id, a code, a number: "invoice INV-2041"). Each
   such argument gets a `Lookup`: the consumer's argument then takes only the producer's output, and the
   producer's query argument is offered first the name the request gives for it ("from Boston" for
   `originLocationCode`). Two arguments served by the same field of the same tool (origin and
   destination codes) get a lookup each; two fields of one tool (latitude and longitude) share one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from planner.argkinds import classify, ordered_tokens
from planner.catalog import ToolCatalog, ToolDef
from planner.config import SelectionConfig
from planner.lexicon import lexicon
from planner.lookups import Producer, entity_words, producers
from planner.steps import Step, tool_verb
from planner.values import Candidate, RequestValues, name_tokens, rank, role_match

_ID_KINDS = ("code", "quoted", "email", "url", "phone")


@dataclass(frozen=True)
class Lookup:
    """Node `producer` (0-based) returns argument `arg` of node `consumer` at output `path` (None: the
    whole output); `seed` is the request's name for the value, offered first to the producer's query."""

    producer: int
    consumer: int
    arg: str
    path: str | None
    seed: str | None = None


@dataclass(frozen=True)
class _Need:
    arg: str
    producer: Producer
    seed: str | None


def literal_for(tool: ToolDef, arg: str, values: RequestValues | None, span: tuple[int, int] | None) -> bool:
    """The request gives `arg` a value of the right shape itself: a number for a number, an id-shaped value
    (a code, quoted text, an e-mail...) for an identifier, one written after the argument's name or role
    word for anything else ("from BOS" for `originLocationCode`, 'the stylist "Anna"')."""
    if values is None:
        return False
    kind = classify(arg, tool.properties.get(arg))
    inside = [c for c in values.candidates if span is None or c.start < 0 or span[0] <= c.start < span[1]]
    if kind.kind in ("number", "integer"):
        return any(c.is_number for c in inside)
    lex = lexicon("en")
    tokens = name_tokens(arg) | set(entity_words(arg, lex))

    def named(c: Candidate) -> bool:
        return bool(tokens & set(c.cue.split()[-2:])) or role_match(c.cue, tokens, lex)

    if kind.kind == "identifier":  # a code or address as it stands; a number or quoted text named an id
        return any(c.kind in ("code", "email", "url") or (c.kind in ("number", "quoted") and named(c)) for c in inside)
    shaped = [c for c in inside if c.kind in _ID_KINDS or _short_code(c)]
    return any(named(c) for c in shaped)


def _short_code(c: Candidate) -> bool:
    """An upper-case word of 2 to 4 letters ("BOS", "EUR"): written as a code, not a name."""
    text = c.value if isinstance(c.value, str) else ""
    return c.kind == "phrase" and text.isalpha() and text.isupper() and len(text) <= 4


def needs_lookup(
    tool: ToolDef, arg: str, catalog: ToolCatalog, config: SelectionConfig, *, lookups: bool = True
) -> Producer | None:
    """The best producer of a required argument that only a lookup fills (None: the argument is not one).
    Without `lookups` (the stage off) only the `prerequisite_identifiers` rule applies."""
    found = producers(tool, arg, catalog)
    if not found:
        return None
    best = found[0]
    kind = classify(arg, tool.properties.get(arg)).kind
    if lookups and (kind == "identifier" or (best.strength == 3 and _names_a_code(tool, arg))):
        return best
    if lookups and kind in ("number", "integer") and best.strength == 1:
        return best
    suffixes = config.prerequisite_identifiers
    if suffixes and arg.endswith(suffixes) and best.strength == 1 and tool_verb(best.tool) != tool_verb(tool.name):
        return best
    return None


def _names_a_code(tool: ToolDef, arg: str) -> bool:
    """The argument's name or description says it takes a code or an id ("IATA code of the airport"),
    not a name a user writes ("Origin city for journey")."""
    lex = lexicon("en")
    described = str((tool.properties.get(arg) or {}).get("description", ""))
    words = {lex.stem(w) for w in (*ordered_tokens(arg), *re.findall(r"[A-Za-z]+", described.lower()))}
    return bool(words & {lex.stem(w) for w in lex.identifier_words | lex.code_words})


def _seed(
    tool: ToolDef,
    arg: str,
    values: RequestValues | None,
    span: tuple[int, int] | None,
    used: set[str],
    producer: ToolDef,
) -> str | None:
    """The name the request gives for `arg`: a phrase, quoted text or words after its role or name,
    never words that only name the tools themselves ("Weather forecast for Lisbon" → "Lisbon")."""
    if values is None:
        return None
    lex = lexicon("en")
    about = " ".join((tool.name, tool.description, producer.name, producer.description))
    tool_words = {lex.stem(w) for w in re.findall(r"[A-Za-z]+", about) for w in ordered_tokens(w)}

    def names_tools(c: Candidate) -> bool:
        words = re.findall(r"[A-Za-z]+", str(c.value))
        return bool(words) and all(lex.stem(w) in tool_words or w.lower() in lex.stopwords for w in words)

    options = {  # values the tool's enums take ("USD") are not names
        str(o).lower()
        for schema in tool.properties.values()
        if isinstance(schema, dict)
        for o in schema.get("enum", [])
    }
    names = [c for c in values.strings() if c.kind in ("phrase", "quoted", "ngram") and c.value not in used]
    names = [c for c in names if not names_tools(c) and str(c.value).lower() not in options]
    inside = [c for c in names if span is None or c.start < 0 or span[0] <= c.start < span[1]]
    description = str((tool.properties.get(arg) or {}).get("description", ""))
    ranked = rank(inside or names, arg, description, span=span, limit=1, lex=lex)
    return str(ranked[0].value) if ranked else None


def with_prerequisites(
    sequence: Sequence[str],
    spans: Sequence[tuple[int, int] | None],
    shortlist: ToolCatalog,
    catalog: ToolCatalog,
    config: SelectionConfig,
    values: RequestValues | None,
    *,
    lookups: bool = True,
) -> tuple[list[str], list[Lookup], list[int]]:
    """The sequence with its prerequisites, the lookups, and for every node the index of the proposed
    node it serves (itself for a proposed node)."""
    if not config.prerequisites:
        return list(sequence), [], list(range(len(sequence)))
    out: list[str] = []
    serves: list[int] = []
    made: list[Lookup] = []
    for index, name in enumerate(sequence):
        tool = catalog.get(name)
        span = spans[index] if index < len(spans) else None
        for other in _majority(tool, sequence, out, shortlist):
            out.append(other)
            serves.append(index)
        found: list[tuple[str, Producer]] = []
        for arg in tool.required:
            producer = needs_lookup(tool, arg, catalog, config, lookups=lookups)
            if producer is None or producer.tool in sequence or literal_for(tool, arg, values, span):
                continue
            if not _given_earlier(out, arg, catalog):
                found.append((arg, producer))
        needs: list[_Need] = []
        used: dict[tuple[str, str | None], set[str]] = {}  # one field of one tool asked twice: two names
        for arg, producer in found:
            taken = used.setdefault((producer.tool, producer.path), set())
            seed = _seed(tool, arg, values, span, taken, catalog.get(producer.tool))
            if seed is not None:
                taken.add(seed)
            needs.append(_Need(arg, producer, seed))
        placed: dict[tuple[str, str | None], int] = {}  # (producer tool, seed when one field serves two) → node
        pending: list[tuple[_Need, int]] = []
        for need in needs:
            key = (need.producer.tool, need.seed if _same_field_twice(need, needs) else None)
            if key not in placed:
                placed[key] = len(out)
                out.append(need.producer.tool)
                serves.append(index)
            pending.append((need, placed[key]))
        consumer = len(out)
        made += [Lookup(at, consumer, n.arg, n.producer.path, n.seed) for n, at in pending]
        out.append(name)
        serves.append(index)
    return out, made, serves


def _same_field_twice(need: _Need, needs: list[_Need]) -> bool:
    """Another argument takes the same field of the same tool: each gets a lookup of its own."""
    return any(
        o is not need and o.producer.tool == need.producer.tool and o.producer.path == need.producer.path for o in needs
    )


def _given_earlier(out: list[str], arg: str, catalog: ToolCatalog) -> bool:
    """A node already in the plan outputs a field named exactly like the argument."""
    return any(arg in {p.rsplit(".", 1)[-1] for p, _ in catalog.get(t).output_fields} for t in out if t in catalog)


def _majority(tool: ToolDef, sequence: Sequence[str], out: list[str], shortlist: ToolCatalog) -> list[str]:
    """Tools whose top-level outputs are most of `tool`'s required arguments (at least two)."""
    required = set(tool.required)
    added: list[str] = []
    for other in shortlist:
        if other.name == tool.name or other.name in sequence or other.name in out or other.name in added:
            continue
        produced = {path for path, _ in other.output_fields if "." not in path}
        overlap = required & produced
        most = len(required) >= 2 and len(overlap) >= max(2, (len(required) + 1) // 2)
        if most and tool_verb(other.name) != tool_verb(tool.name):
            added.append(other.name)
    return added


def step_spans(steps: Sequence[Step | None]) -> list[tuple[int, int] | None]:
    return [(s.start, s.end) if s is not None else None for s in steps]

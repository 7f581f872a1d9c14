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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from planner.argkinds import classify, identifier_like, ordered_tokens
from planner.catalog import ToolCatalog, ToolDef
from planner.config import SelectionConfig
from planner.flat_args import field_name, id_items_view
from planner.lexicon import Lexicon, lexicon
from planner.lookup_seeds import id_code, lookup_seed, thing_words
from planner.lookups import (
    Producer,
    described_entity,
    description_keywords,
    entity_words,
    name_verbs,
    named_before_id,
    nouns,
    producers,
    queryable,
)
from planner.slot_candidates import fits_string
from planner.steps import Step, tool_verb
from planner.value_shapes import examples_allow
from planner.values import Candidate, RequestValues, ends_in_name, name_tokens, role_match

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
class Gap:
    """Argument `arg` of node `consumer` is an identifier the request does not give and only `producer`
    could look up, with nothing in the request to look it up by: the user must say which one."""

    consumer: int
    arg: str
    producer: str


@dataclass(frozen=True)
class _Need:
    arg: str
    producer: Producer
    seed: str | None


def literal_for(tool: ToolDef, arg: str, values: RequestValues | None, span: tuple[int, int] | None) -> bool:
    """The request gives `arg` a value of the right shape itself: a number for a number; for an
    identifier a code ("CUS-4711"), or an address when the argument is one (`emailOrId`), or a number or
    quoted text it names as the id ("customer 4711"); for anything else a code written after the
    argument's name or role word ("from BOS" for `originLocationCode`, 'the stylist "Anna"')."""
    if values is None:
        return False
    schema = tool.properties.get(arg)
    kind = classify(arg, schema)
    inside = [c for c in values.candidates if span is None or c.start < 0 or span[0] <= c.start < span[1]]
    lex = lexicon("en")
    tokens = name_tokens(arg) | set(entity_words(arg, lex))
    if tokens <= lex.identifier_words:  # a bare `id`/`Sid`: the thing the tool acts on names it ("conversation CH1b…")
        others = {w for a in tool.required if a != arg for w in entity_words(a, lex)}  # not `ConversationSid`'s
        tokens |= set(nouns(tool.name, lex)) - others

    other_ids = {  # the words naming the tool's other identifiers ("workspace" of `data.workspace`)
        w
        for a in tool.arg_names()
        if a != arg and classify(a, tool.properties.get(a)).is_identifier
        for w in name_tokens(a) | set(entity_words(a, lex))
    } - tokens - lex.identifier_words

    stems = {lex.stem(t) for t in tokens}

    def names(word: str) -> bool:  # "bookshelf" names `shelf` too; "the video" names `videos_rate`'s thing
        return word in tokens or lex.stem(word) in stems or ends_in_name(word, tokens)

    def named(c: Candidate) -> bool:
        cue = c.cue.split()
        if cue and cue[-1] in other_ids:  # "the Onboarding project (workspace 1201987654321)": the workspace's
            return False
        content = [w for w in cue if w not in lex.stopwords]
        if len(content) > 1 and content[-1] in lex.identifier_words:  # "my bookshelf with ID 2": the shelf's
            return names(content[-2])
        return any(names(w) for w in cue[-2:]) or role_match(c.cue, tokens, lex)

    def elsewhere(c: Candidate) -> bool:  # "workspace 1201987654321", "our space is 88120034": not the project's
        content = [w for w in c.cue.split()[-3:] if w not in lex.stopwords and w not in lex.identifier_words]
        word = content[-1] if content else ""
        verbs = lex.action_verbs | lex.lookup_verbs | lex.mutating_verbs
        return word.isalpha() and word not in verbs and not named(c)

    if kind.kind in ("number", "integer"):  # an integer id ("droplet 290114537") only a number said of it
        ident = identifier_like(arg, schema if isinstance(schema, dict) else {}, lex)
        return any(
            c.is_number and (not ident or (_in_digits(c, values) and (named(c) or not elsewhere(c)))) for c in inside
        )

    if kind.kind == "identifier":  # `emailOrId`, "The contact ID or email": an address is one too
        described = {w.lower() for w in _words(tool.properties.get(arg))}
        addresses = {k for k, words in lex.kind_words.items() if (tokens | described) & words}

        other_things = [  # what the tool's other identifiers identify
            thing_words(tool, other)
            for other in tool.arg_names()
            if other != arg and classify(other, tool.properties.get(other)).is_identifier
        ]

        def claimed(c: Candidate) -> bool:  # "shopper cust-8841" is the shopper's reference, not this id;
            cue = {lex.stem(w) for w in c.cue.split()[-2:]}  # "with the tag 7522907" the optional `id`'s
            return not named(c) and any(words & cue for words in other_things)  # ("The unique identifier for the tag")

        fitting = [c for c in inside if fits_string(str(c.value) if c.is_number else c.value, schema or {})]
        # what the description calls the thing ("Target calendar identifier."): an address written right
        # after that word is the id ("to the calendar team@group.calendar.google.com") where the schema's
        # examples allow an address at all (planner/value_shapes.py)
        thing = {lex.stem(w) for w in named_before_id(_words(schema), lex)}

        def called(c: Candidate) -> bool:
            cue = c.cue.split()
            return bool(cue) and lex.stem(cue[-1]) in thing and examples_allow(c, schema or {})

        return any(  # quoted words are a name ("event 'Design review'"), never an id; nor is "alpha-3" or "utf-8"
            (id_code(c) or c.kind in addresses)
            and not claimed(c)
            and not elsewhere(c)
            or (c.kind == "number" and _in_digits(c, values) and named(c))
            or (c.kind in ("email", "url") and called(c))
            for c in fitting  # "the pg-data-01 volume" is no `format: uuid` id: a name to look up
        )
    shaped = [c for c in inside if c.kind in _ID_KINDS or _short_code(c)]
    return any(named(c) for c in shaped)


def _words(schema: object) -> list[str]:
    """The words of a schema's description."""
    return re.findall(r"[A-Za-z]+", str((schema if isinstance(schema, dict) else {}).get("description", "")))


def _in_digits(c: Candidate, values: RequestValues) -> bool:
    """The number is written in digits: an id is ("customer 4711"); a number word is a count or a kind
    ("the single send named 'Spring Sale'" gives no id 1)."""
    return c.start < 0 or any(ch.isdigit() for ch in values.text[c.start : c.end])


def _short_code(c: Candidate) -> bool:
    """An upper-case word of 2 to 4 letters ("BOS", "EUR"): written as a code, not a name."""
    text = c.value if isinstance(c.value, str) else ""
    return c.kind == "phrase" and text.isalpha() and text.isupper() and len(text) <= 4


def needs_lookup(
    tool: ToolDef,
    arg: str,
    catalog: ToolCatalog,
    config: SelectionConfig,
    *,
    lookups: bool = True,
    similarity: Mapping[str, float] | None = None,
    lookups_only: bool = True,
    values: RequestValues | None = None,
    span: tuple[int, int] | None = None,
) -> Producer | None:
    """The best producer of a required argument that only a lookup fills (None: the argument is not one).
    Without `lookups` (the stage off) only the `prerequisite_identifiers` rule applies. With the request's
    `values`, a producer the request can call first: one whose own required identifiers it names ("the
    card of shopper cust-8841" calls `getStoredPaymentMethods(shopperReference)`, not `getPaymentLink(linkId)`
    though that one outputs a field named like the argument)."""
    found = producers(tool, arg, catalog, similarity, lookups_only=lookups_only)
    if not found:
        return None
    if values is not None:
        callable_first = [p for p in found if _callable(catalog.get(p.tool), values, span)]
        if not callable_first and description_keywords(tool.properties.get(arg), arg):
            return None  # the argument's own keyword ("primary") beats a lookup that needs an id nobody gives
        found = callable_first + [p for p in found if p not in callable_first]
    best = found[0]
    kind = classify(arg, tool.properties.get(arg)).kind
    schema = tool.properties.get(arg)
    integer_id = kind in ("number", "integer") and identifier_like(arg, schema if isinstance(schema, dict) else {})
    if lookups and (kind == "identifier" or integer_id or (best.strength == 3 and _names_a_code(tool, arg))):
        return best
    if lookups and kind in ("number", "integer") and best.strength == 1:
        return best
    suffixes = config.prerequisite_identifiers
    if suffixes and arg.endswith(suffixes) and best.strength == 1 and tool_verb(best.tool) != tool_verb(tool.name):
        return best
    return None


def _callable(tool: ToolDef, values: RequestValues, span: tuple[int, int] | None) -> bool:
    """Every required identifier of the tool is a value the request writes right after the identifier's
    name or entity ("shopper cust-8841" for `shopperReference`), or one whose description offers a keyword
    for it (Google's `calendarId`: "use the "primary" keyword")."""
    lex = lexicon("en")
    inside = [
        c for c in values.candidates if c.written and (span is None or c.start < 0 or span[0] <= c.start < span[1])
    ]
    for arg in tool.required:
        if not classify(arg, tool.properties.get(arg)).is_identifier or description_keywords(
            tool.properties.get(arg), arg
        ):
            continue
        tokens = name_tokens(arg) | set(entity_words(arg, lex))
        if not any(c.kind in _ID_KINDS + ("number",) and tokens & set(c.cue.split()[-2:]) for c in inside):
            return False
    return True


def _names_a_code(tool: ToolDef, arg: str) -> bool:
    """The argument's name or description says it takes a code or an id ("IATA code of the airport"),
    not a name a user writes ("Origin city for journey")."""
    lex = lexicon("en")
    described = str((tool.properties.get(arg) or {}).get("description", ""))
    words = {lex.stem(w) for w in (*ordered_tokens(arg), *re.findall(r"[A-Za-z]+", described.lower()))}
    return bool(words & {lex.stem(w) for w in lex.identifier_words | lex.code_words})


def with_prerequisites(
    sequence: Sequence[str],
    spans: Sequence[tuple[int, int] | None],
    shortlist: ToolCatalog,
    catalog: ToolCatalog,
    config: SelectionConfig,
    values: RequestValues | None,
    *,
    lookups: bool = True,
    similarity: Mapping[str, float] | None = None,
) -> tuple[list[str], list[Lookup], list[int], list[Gap]]:
    """The sequence with its prerequisites, the lookups, for every node the index of the proposed node it
    serves (itself for a proposed node), and the identifiers nothing can fill (`Gap`: no producer and no
    value, or a lookup with nothing in the request to look up by)."""
    if not config.prerequisites:
        return list(sequence), [], list(range(len(sequence))), []
    out: list[str] = []
    serves: list[int] = []
    made: list[Lookup] = []
    gaps: list[Gap] = []
    for index, name in enumerate(sequence):
        tool = id_items_view(catalog.get(name))
        span = spans[index] if index < len(spans) else None
        given = {arg for arg in tool.required if literal_for(tool, arg, values, span)}
        for other in _majority(tool, sequence, out, shortlist, given):
            out.append(other)
            serves.append(index)
        needs: list[_Need] = []
        used: dict[tuple[str, str | None], set[str]] = {}  # one field of one tool asked twice: two names
        earlier = catalog.subset([t for t in dict.fromkeys(out) if t in catalog]) if out else None
        named_ids = _named_identifiers(tool, values, span) if lookups else {}
        for arg in (*tool.required, *named_ids):
            if literal_for(tool, arg, values, span) or _given_earlier(out, arg, catalog):
                continue
            if (
                lookups
                and earlier is not None
                and (done := needs_lookup(tool, arg, earlier, config, lookups_only=False))
            ):  # a node already planned returns it (`domains_create` → `$n1.id`)
                at = max(i for i, t in enumerate(out) if t == done.tool)
                made.append(Lookup(at, -1, arg, done.path, None))
                continue
            producer = needs_lookup(
                tool, arg, catalog, config, lookups=lookups, similarity=similarity, values=values, span=span
            )
            if producer is None or producer.tool in sequence:
                continue
            keywords = description_keywords(tool.properties.get(arg), arg)
            taken = used.setdefault((producer.tool, producer.path), set())
            seed = named_ids.get(arg) or lookup_seed(
                tool, arg, values, span, taken, catalog.get(producer.tool), cued_only=bool(keywords)
            )
            identifier = classify(arg, tool.properties.get(arg)).is_identifier
            if seed is not None and _lists_everything(catalog.get(producer.tool), values):
                seed = None  # a name it cannot be asked for picks nothing ("one of my bookshelves"): a gap
            if seed is None and identifier:
                if not keywords and lookups:  # nothing names the thing: which one is meant is the user's to say
                    gaps.append(Gap(-1, arg, producer.tool))
                continue
            if seed is not None:
                taken.add(seed)
            needs.append(_Need(arg, producer, seed))  # (a `stylist_name` is looked up by what else is said)
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
        made = [replace(lk, consumer=consumer) if lk.consumer == -1 else lk for lk in made]
        made += [Lookup(at, consumer, n.arg, n.producer.path, n.seed) for n, at in pending]
        gaps = [replace(g, consumer=consumer) if g.consumer == -1 else g for g in gaps]
        out.append(name)
        serves.append(index)
    return out, made, serves, gaps


def _lists_everything(producer: ToolDef, values: RequestValues | None) -> bool:
    """The lookup takes no name (no required string, nothing named like a query: planner/lookups.py
    `queryable`) and the request gives none of its arguments a value: it returns every item, and which
    one is meant only the user can say. (A list filtered by what the request gives, like the stored
    payment methods of "shopper cust-8841", narrows it.)"""
    if queryable(producer, lexicon("en")) < 2:
        return False
    return not any(literal_for(producer, arg, values, None) for arg in producer.arg_names())


def _named_identifiers(tool: ToolDef, values: RequestValues | None, span: tuple[int, int] | None) -> dict[str, str]:
    """Optional identifiers the request names the thing of: "to the company Globex Corporation" or "the
    Initech company" for `body_id` ("The unique identifier for the company") → {"body_id": "Globex
    Corporation"}. Such an argument is looked up like a required one (an optional identifier the request
    says nothing about is left out)."""
    if values is None:
        return {}
    lex = lexicon("en")
    inside = [c for c in values.strings() if span is None or c.start < 0 or span[0] <= c.start < span[1]]
    names = [c for c in inside if c.kind in ("phrase", "quoted", "filename") and c.written]
    out: dict[str, str] = {}
    made = {lex.stem(w) for w in nouns(tool.name, lex)} if name_verbs(tool.name, lex) & lex.creating_verbs else set()
    for arg in tool.arg_names():
        schema = tool.properties.get(arg)
        if arg in tool.required or not classify(arg, schema).is_identifier:
            continue
        described = _words(schema)
        own = field_name(arg)
        words = entity_words(own, lex) if len(ordered_tokens(own)) > 1 else []
        entity = {lex.stem(w) for w in [*words, *described_entity(described, lex)] if len(w) > 2}
        if entity & made:  # the id of what the tool creates ("新建一个叫“招聘日程”的日历"): the service's
            continue
        for c in names:
            cue = c.cue.split()
            if (
                c.value not in out.values()
                and ((cue and lex.stem(cue[-1]) in entity) or (c.tail and lex.stem(c.tail) in entity))
                and not _cue_names_another(tool, arg, cue[-3:], lex)
            ):
                out[arg] = str(c.value)
                break
    return out


def _cue_names_another(tool: ToolDef, arg: str, cue: list[str], lex: Lexicon) -> bool:
    """The words before a value name another argument more fully than `arg`: "on merchant account
    AcmeShopEU" is Adyen's `merchantAccount`, not the `costAllocationAccount` that also ends in "account"."""
    said = {lex.stem(w) for w in cue}

    def hits(name: str) -> int:
        return sum(1 for w in ordered_tokens(field_name(name)) if lex.stem(w) in said)

    mine = hits(arg)
    return any(hits(other) > mine for other in tool.arg_names() if other != arg)


def _same_field_twice(need: _Need, needs: list[_Need]) -> bool:
    """Another argument takes the same field of the same tool: each gets a lookup of its own."""
    return any(
        o is not need and o.producer.tool == need.producer.tool and o.producer.path == need.producer.path for o in needs
    )


def _given_earlier(out: list[str], arg: str, catalog: ToolCatalog) -> bool:
    """A node already in the plan outputs a field named exactly like the argument."""
    return any(arg in {p.rsplit(".", 1)[-1] for p, _ in catalog.get(t).output_fields} for t in out if t in catalog)


def _majority(
    tool: ToolDef, sequence: Sequence[str], out: list[str], shortlist: ToolCatalog, given: set[str]
) -> list[str]:
    """Tools whose top-level outputs are most of `tool`'s required arguments the request does not `given`
    itself (at least two)."""
    required = set(tool.required) - given
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

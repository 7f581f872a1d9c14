"""Identifier lookups: which other tool returns the value a required argument needs.

Real APIs take identifiers only another operation returns: `createInvoice(customerId)` needs the id
`searchCustomers` returns, `searchFlightOffers(originLocationCode)` the IATA code `searchLocations`
returns. A request names the customer or the city, never the id, so the plan must call the lookup first
and reference its output; a name is never passed where an identifier is required.

A producer is a tool that looks things up — its name has no verb that changes something (`create`,
`insert`, `delete`, `watch`... in the lexicon's `mutating_verbs`) unless it also has a lookup verb
(`search`, `list`, `get`...) — and matches, best first:

1. an output field named like the argument in any naming style (`customerId`, `customer_id`,
   `customer-id`), at the top level or in the first item of a returned list (`customers.0.customerId`);
2. an identifier field (`id`) where the argument's entity (`customer` of `customerId`; for a bare `id`,
   the nouns of the consumer's own name: `UpdateContact` → contact) names the field's list or object or
   the producer itself (`customers.0.id`, `SearchContacts` → `data.0.id`);
3. an output field the argument's description names ("IATA code of the departure airport" ← `iataCode`);
4. without output schemas, descriptions: the argument's description names the tool ("as returned by
   searchCustomers") or the tool's description names the argument ("returns their IATA codes", "customer
   IDs"); the reference is then the producer's whole output;
5. without output schemas, for an identifier: a lookup tool named for the argument's entity
   (`searchCustomers` for `customerId`) that needs no identifier itself.

Among producers of one strength, the one whose name the argument's description names, then one a name
can be passed to (a required string argument, else one named like a query), then the one most similar to
the request (`similarity`, from the tool selection) comes first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from planner.argkinds import classify, identifier_like, ordered_tokens
from planner.catalog import ToolCatalog, ToolDef
from planner.flat_args import field_name
from planner.lexicon import Lexicon, lexicon


@dataclass(frozen=True)
class Producer:
    """A tool that returns an argument's value: `path` is the output field (None: the whole output)."""

    tool: str
    path: str | None
    strength: int  # 1 (best) .. 5, the rule that matched (see the module docstring)


def _norm(words: list[str], lex: Lexicon) -> tuple[str, ...]:
    return tuple(lex.stem(w) for w in words)


def _contains(haystack: list[str], needle: list[str], lex: Lexicon) -> bool:
    """`needle`'s words appear in `haystack` in order, next to each other (stems compared)."""
    if not needle:
        return False
    hay, need = _norm(haystack, lex), _norm(needle, lex)
    if any(hay[i : i + len(need)] == need for i in range(len(hay) - len(need) + 1)):
        return True
    joined = "".join(need)  # a compound written as one word or as two: `tasklists` and "task list"
    return len(need) + len(hay) > 2 and any(
        "".join(hay[i:j]) == joined for i in range(len(hay)) for j in range(i + 1, len(hay) + 1) if j - i != len(need)
    )


def _text_words(text: str) -> list[str]:
    return [w for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", text) for w in ordered_tokens(word)]


def nouns(name: str, lex: Lexicon) -> list[str]:
    """The words of a tool name but its verbs: `ScheduleSingleSend` → ["single", "send"] (a verb is dropped
    only at either end: "send" here is part of the thing)."""
    words = ordered_tokens(name.rsplit(".", 1)[-1])
    verbs = lex.action_verbs | lex.lookup_verbs | lex.mutating_verbs
    while words and words[0] in verbs:
        words = words[1:]
    while words and words[-1] in verbs:
        words = words[:-1]
    return words


def entity_words(arg: str, lex: Lexicon) -> list[str]:
    """`customerId` → ["customer"]; `originLocationCode` → ["origin", "location"]; `id` → []."""
    words = ordered_tokens(arg)
    return words[:-1] if len(words) > 1 and (words[-1] in lex.identifier_words or words[-1] == "code") else words


def name_verbs(name: str, lex: Lexicon) -> set[str]:
    """The verbs of a tool name: its first and last words that are verbs (`SearchContacts` → search,
    `calendar_calendarList_watch` → watch: "list" inside `calendarList` is a noun there)."""
    words = ordered_tokens(name.rsplit(".", 1)[-1])
    verbs = lex.action_verbs | lex.lookup_verbs | lex.mutating_verbs
    return {w for w in (words[:1] + words[-1:]) if w in verbs}


def is_lookup(tool: ToolDef, lex: Lexicon) -> bool:
    """A tool that looks things up: a lookup verb at either end of its name (`SearchSingleSend`), or no
    verb that changes anything anywhere in it (not `contacts_update-topics`, not `calendarList_watch`)."""
    if name_verbs(tool.name, lex) & lex.lookup_verbs:
        return True
    return not (set(ordered_tokens(tool.name.rsplit(".", 1)[-1])) & lex.mutating_verbs)


def queryable(tool: ToolDef, lex: Lexicon) -> int:
    """How well a request's name can be passed to a lookup: 0 a required string argument that is no
    identifier (`books_volumes_list(q)`, not `bookshelves_volumes_list(shelf)`), 1 an argument named like a
    query (the lexicon's `query_words`), 2 neither (it lists everything)."""
    strings = [a for a, s in tool.properties.items() if isinstance(s, dict) and s.get("type") in ("string", None)]
    if any(a in tool.required and not classify(a, tool.properties[a]).is_identifier for a in strings):
        return 0
    return 1 if any(set(ordered_tokens(a)) & set(lex.query_words) for a in strings) else 2


def producers(
    consumer: ToolDef,
    arg: str,
    catalog: ToolCatalog,
    similarity: Mapping[str, float] | None = None,
    *,
    lookups_only: bool = True,
) -> list[Producer]:
    """Other tools of `catalog` that return `arg` of `consumer`, best first (empty: none). Without
    `lookups_only`, tools that change something count too (a node already in the plan: `domains_create`
    returns the id of the domain it created)."""
    lex = lexicon("en")
    schema = consumer.properties.get(arg)
    schema = schema if isinstance(schema, dict) else {}
    described = _text_words(str(schema.get("description", "")))
    arg_words = ordered_tokens(field_name(arg))  # `snippet.resourceId.videoId` of a flat view is a `videoId`
    identifier = classify(arg, schema).is_identifier or identifier_like(arg, schema, lex)  # an integer id too
    named = entity_words(arg, lex) if len(arg_words) > 1 else []
    told = described_entity(described, lex) if identifier else []
    for entity in [named] + ([told] if told and _norm(told, lex) != _norm(named, lex) else []):
        found = _producers(consumer, arg, catalog, arg_words, entity, described, identifier, lookups_only, lex)
        if found:
            break
    scores = similarity or {}
    # best first: the strongest match, a tool named for what the description says, one a name can be passed
    # to, then the one that needs the fewest arguments besides its query (the catalog's own search before a list inside
    # another thing: `books_volumes_list(q)` before `bookshelves_volumes_list(shelf)`), then similarity
    found.sort(key=lambda item: (item[0].strength, *item[1], -scores.get(item[0].tool, 0.0)))
    return [producer for producer, _ in found]


def described_entity(described: list[str], lex: Lexicon) -> list[str]:
    """The thing an identifier's description says it identifies: "The unique identifier for the company
    which is given by Intercom" → ["company"] (a name like `body_id`, flattened from a request body,
    does not say it)."""
    for i, word in enumerate(described[:-1]):
        if word.lower() in lex.identifier_words or word.lower() == "identifier":
            rest = described[i + 1 : i + 4]
            if rest and rest[0].lower() in ("for", "of"):
                thing = [w.lower() for w in rest[1:] if w.lower() not in lex.determiners]
                return thing[:1]
    return named_before_id(described, lex)


def named_before_id(described: list[str], lex: Lexicon) -> list[str]:
    """The thing a description that opens with a short noun phrase ending in "identifier" names before it:
    "Task list identifier." → ["task", "list"], "Parent task identifier. …" → ["parent", "task"]."""
    for i, word in enumerate(described[:4]):
        if word.lower() in ("identifier", "id"):
            thing = [w.lower() for w in described[:i] if w.lower() not in lex.determiners]
            return thing if 0 < len(thing) <= 3 else []
    return []


def _producers(
    consumer: ToolDef,
    arg: str,
    catalog: ToolCatalog,
    arg_words: list[str],
    entity: list[str],
    described: list[str],
    identifier: bool,
    lookups_only: bool,
    lex: Lexicon,
) -> list[tuple[Producer, tuple[int, int, int]]]:
    bare = identifier and not entity and set(arg_words) <= lex.identifier_words  # `id`, `Sid`: not `shelf`
    own = nouns(consumer.name, lex) if bare else []  # a bare `id`: the consumer's thing
    found: list[tuple[Producer, tuple[int, int, int]]] = []
    for tool in catalog:
        if tool.name == consumer.name or arg in tool.required or (lookups_only and not is_lookup(tool, lex)):
            continue
        match = _by_output(tool, arg_words, entity, own, described, identifier, lex)
        if match is None and not tool.output_fields:
            match = _by_description(tool, arg_words, entity, described, identifier, lex)
        if match is not None:
            named = -len(set(_norm(nouns(tool.name, lex), lex)) & set(_norm(described, lex)))
            others = sum(1 for a in tool.required if not set(ordered_tokens(a)) & set(lex.query_words))
            found.append((match, (named, queryable(tool, lex), others)))
    return found


def _by_output(
    tool: ToolDef,
    arg_words: list[str],
    entity: list[str],
    own: list[str],
    described: list[str],
    identifier: bool,
    lex: Lexicon,
) -> Producer | None:
    tool_words = ordered_tokens(tool.name)
    shares_own = bool(set(_norm(own, lex)) & set(_norm(nouns(tool.name, lex), lex)))
    best: Producer | None = None
    for path, kind in tool.output_fields:
        if kind in ("object", "array"):
            continue
        parts = path.split(".")
        leaf = ordered_tokens(parts[-1])
        parents = [w for part in parts[:-1] if not part.isdigit() for w in ordered_tokens(part)]
        strength = 0
        # an identifier field: `id`, or the word the argument itself calls its identifier (`gid` of `project_gid`)
        bare = len(leaf) == 1 and (leaf[0] in lex.identifier_words or (identifier and leaf == arg_words[-1:]))
        # the id of another thing the tool is named for (`snapshot.id` of `get_volume_snapshot_by_id` is the
        # snapshot's, not the volume's)
        others = set(_norm(nouns(tool.name, lex), lex)) - set(_norm(entity, lex))
        another = bool(entity) and not _contains(parents, entity, lex) and bool(set(_norm(parents, lex)) & others)
        names_entity = bool(entity) and not another and (
            _contains(parents, entity, lex) or _contains(tool_words, entity, lex) or _finds_kind(tool, entity, lex)
        )
        if _norm(leaf, lex) == _norm(arg_words, lex) and (not bare or entity or shares_own):
            strength = 1  # a bare `id` matches a bare `id` only for the consumer's own thing
        elif identifier and bare and (names_entity or (shares_own and len(parts) <= 3)):
            strength = 2
        elif len(leaf) > 1 and _contains(described, leaf, lex):
            strength = 3
        shorter = best is not None and strength == best.strength and len(path) < len(best.path or "")
        if strength and (best is None or strength < best.strength or shorter):
            best = Producer(tool.name, path, strength)
    return best


def _finds_kind(tool: ToolDef, entity: list[str], lex: Lexicon) -> bool:
    """A search over several kinds of thing that one argument chooses among (Asana's typeahead:
    `resource_type` of project, task, user…): it finds the entity when one of those options is it."""
    wanted = _norm(entity, lex)
    for schema in tool.properties.values():
        options = schema.get("enum") if isinstance(schema, dict) else None
        if isinstance(options, list) and any(
            isinstance(o, str) and _norm(ordered_tokens(o), lex) == wanted for o in options[:64]
        ):
            return True
    return False


def kind_option(producer: ToolDef, consumer: ToolDef, arg: str) -> tuple[str, str] | None:
    """(the producer's enum argument, its option) that makes a search over several kinds of thing
    (Asana's typeahead `resource_type`) find the thing `arg` of `consumer` identifies: the project for
    `project_gid` or for a list of "Gid of a project." items; None when the producer chooses no kind."""
    lex = lexicon("en")
    schema = consumer.properties.get(arg)
    schema = schema if isinstance(schema, dict) else {}
    named = entity_words(arg, lex)
    told = described_entity(_text_words(str(schema.get("description", ""))), lex)
    wanted = [_norm(words, lex) for words in (told, named, named[-1:]) if words]
    for name, option_schema in producer.properties.items():
        options = option_schema.get("enum") if isinstance(option_schema, dict) else None
        if not isinstance(options, list):
            continue
        for option in options[:64]:
            if isinstance(option, str) and _norm(ordered_tokens(option), lex) in wanted:
                return name, option
    return None


def _by_description(
    tool: ToolDef, arg_words: list[str], entity: list[str], described: list[str], identifier: bool, lex: Lexicon
) -> Producer | None:
    name_words = ordered_tokens(tool.name)
    if _contains(described, name_words, lex) and len(name_words) > 1:
        return Producer(tool.name, None, 4)
    said = _text_words(tool.description)
    if identifier and (_contains(said, arg_words, lex) or _contains(said, [*entity, "ids"], lex)):
        return Producer(tool.name, None, 4)
    if not identifier and len(arg_words) > 1 and _contains(said, arg_words, lex):
        return Producer(tool.name, None, 4)
    needs_id = any(classify(a, tool.properties.get(a)).is_identifier for a in tool.required)
    lookup = bool(name_words) and name_words[0] in lex.lookup_verbs and not needs_id
    if identifier and entity and lookup and _contains(name_words[1:], entity, lex):
        return Producer(tool.name, None, 5)
    return None


def lookup_target(consumer: ToolDef, arg: str, catalog: ToolCatalog) -> bool:
    """An argument only a lookup fills when the request names, not identifies, its value."""
    schema = consumer.properties.get(arg)
    return classify(arg, schema).is_identifier or bool(producers(consumer, arg, catalog))


def description_keywords(schema: object, name: str = "") -> list[str]:
    """Literal values an argument's description offers in quotes, in a sentence that says to use them
    ('If you want ... the primary calendar, use the "primary" keyword.'), not the names of parameters,
    fields or methods it mentions ("with the `branch_data` query param") nor the argument's own `name`."""
    lex = lexicon("en")
    text = str(schema.get("description", "")) if isinstance(schema, dict) else ""
    found: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if {w.lower() for w in re.findall(r"[A-Za-z]+", sentence)} & lex.keyword_cues:
            for match in _QUOTED_WORD.finditer(sentence):
                word, after = match.group(1), match.group(2).lower()
                if after not in lex.keyword_not_before and not _FIELD_NAME.search(word) and word != name:
                    found.append(word)
    return list(dict.fromkeys(found))


_QUOTED_WORD = re.compile(r"[\"“`]([A-Za-z][\w-]{1,30})[\"”`]\s*([A-Za-z]*)")
_FIELD_NAME = re.compile(r"_|[a-z][A-Z]")  # `segment_id`, `encryptedCardNumber`: a field's name, not a value

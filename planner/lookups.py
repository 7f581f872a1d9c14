"""Identifier lookups: which other tool returns the value a required argument needs.

Real APIs take identifiers only another operation returns: `createInvoice(customerId)` needs the id
`searchCustomers` returns, `searchFlightOffers(originLocationCode)` the IATA code `searchLocations`
returns. A request names the customer or the city, never the id, so the plan must call the lookup first
and reference its output; a name is never passed where an identifier is required.

An argument is a *lookup target* when it is an identifier (planner/argkinds.py) or when another tool's
output field or description matches it. A producer matches, best first:

1. an output field named like the argument in any naming style (`customerId`, `customer_id`,
   `customer-id`), at the top level or in the first item of a returned list (`customers.0.customerId`);
2. an identifier field (`id`) of a list or object named for the argument's entity (`customers.0.id` for
   `customerId`), or of a tool named for it (`getCustomer` → `id`);
3. an output field the argument's description names ("IATA code of the departure airport" ← `iataCode`);
4. without output schemas, descriptions: the argument's description names the tool ("as returned by
   searchCustomers") or the tool's description names the argument ("returns their IATA codes", "customer
   IDs"); the reference is then the producer's whole output;
5. without output schemas, for an identifier: a lookup tool (its name starts with a lookup verb of the
   lexicon: search, list, find, get...) named for the argument's entity (`searchCustomers` for
   `customerId`) that needs no identifier itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.argkinds import classify, ordered_tokens
from planner.catalog import ToolCatalog, ToolDef
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
    return any(hay[i : i + len(need)] == need for i in range(len(hay) - len(need) + 1))


def _text_words(text: str) -> list[str]:
    return [w for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", text) for w in ordered_tokens(word)]


def entity_words(arg: str, lex: Lexicon) -> list[str]:
    """`customerId` → ["customer"]; `originLocationCode` → ["origin", "location"]."""
    words = ordered_tokens(arg)
    return words[:-1] if len(words) > 1 and (words[-1] in lex.identifier_words or words[-1] == "code") else words


def producers(consumer: ToolDef, arg: str, catalog: ToolCatalog) -> list[Producer]:
    """Other tools of `catalog` that return `arg` of `consumer`, best first (empty: none)."""
    lex = lexicon("en")
    schema = consumer.properties.get(arg)
    schema = schema if isinstance(schema, dict) else {}
    description = str(schema.get("description", ""))
    arg_words = ordered_tokens(arg)
    entity = entity_words(arg, lex)
    described = _text_words(description)
    identifier = classify(arg, schema).is_identifier
    found: list[Producer] = []
    for tool in catalog:
        if tool.name == consumer.name or arg in tool.required:
            continue
        match = _by_output(tool, arg_words, entity, described, identifier, lex)
        if match is None and not tool.output_fields:
            match = _by_description(tool, arg_words, entity, described, identifier, lex)
        if match is not None:
            found.append(match)
    return sorted(found, key=lambda p: p.strength)


def _by_output(
    tool: ToolDef, arg_words: list[str], entity: list[str], described: list[str], identifier: bool, lex: Lexicon
) -> Producer | None:
    tool_words = ordered_tokens(tool.name)
    best: Producer | None = None
    for path, kind in tool.output_fields:
        if kind in ("object", "array"):
            continue
        parts = path.split(".")
        leaf = ordered_tokens(parts[-1])
        parents = [w for part in parts[:-1] if not part.isdigit() for w in ordered_tokens(part)]
        strength = 0
        if _norm(leaf, lex) == _norm(arg_words, lex):
            strength = 1
        elif identifier and leaf and leaf[-1] in lex.identifier_words and len(leaf) == 1 and entity:
            if _contains(parents, entity, lex) or (not parents and _contains(tool_words, entity, lex)):
                strength = 2
        elif len(leaf) > 1 and _contains(described, leaf, lex):
            strength = 3
        if strength and (best is None or strength < best.strength):
            best = Producer(tool.name, path, strength)
    return best


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

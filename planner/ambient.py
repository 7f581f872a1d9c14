"""Parameters about the call, not the action: the optional ones every tool of a catalog takes alike.

Generated API descriptions repeat their transport parameters on every operation: Google's `fields`
(a partial-response mask), `alt`, `prettyPrint`, `quotaUser`, `callback`; Asana's `opt_pretty`; a
version header. No request chooses them with its words — "Field trip permission slips are due" is no
`fields` mask — and the service's default is what a plan wants, so the planner never writes them.

The rule is structural, not a list of names: an optional parameter is *ambient* when every tool of the
catalog declares it with the same schema, optional everywhere, and the catalog's tools do different kinds
of things: at least one looks things up and one changes something, or they change things in two ways
(create and delete). A parameter that means the same to a search and a create, or to a create and a
delete, is about the call. A catalog of searches alone that all take `limit` keeps it: there the word
says how many results the user wants.
"""

from __future__ import annotations

import json

from planner.catalog import ToolCatalog
from planner.lexicon import Lexicon
from planner.lookups import is_lookup, name_verbs

MIN_TOOLS = 3  # fewer tools say nothing about what is shared: one tool shares everything with itself


def ambient_parameters(catalog: ToolCatalog, lex: Lexicon) -> frozenset[str]:
    """The catalog's ambient parameters (module docstring); empty when it has fewer than MIN_TOOLS tools
    or its tools all do one kind of thing."""
    tools = list(catalog)
    if len(tools) < MIN_TOOLS:
        return frozenset()
    lookups = sum(is_lookup(tool, lex) for tool in tools)
    changes = {verb for tool in tools for verb in name_verbs(tool.name, lex) & lex.mutating_verbs}
    if not ((0 < lookups < len(tools)) or len(changes) >= 2):
        return frozenset()  # one kind of action: a parameter they all take may still be the user's to set
    names = set.intersection(*({n for n in tool.properties if n not in tool.required} for tool in tools))
    if not names:
        return frozenset()
    first = tools[0].properties
    return frozenset(name for name in names if all(_same(tool.properties[name], first[name]) for tool in tools[1:]))


def _same(a: object, b: object) -> bool:
    return a == b or json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)

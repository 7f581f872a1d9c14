"""A lookup queried through a filter object: `{"field": "email", "operator": "=", "value": "ana@x.io"}`.

Search APIs often take one condition as an object of three parts — which field, how to compare, what
value (Intercom's `query`, HubSpot-style `filters`) — instead of a query string. When a lookup's only way
to be queried by the request's name is such an argument, the name fills the value, the equality option
fills the operator, and the field is named for the name's shape (`email` for an e-mail address, `phone`,
`url`, else `name`). The parts are recognised by their schema and the lexicon's `filter_words`
(configs/lexicon/en.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.argkinds import ordered_tokens
from planner.lexicon import lexicon


def filter_object(schema: Any) -> dict[str, str] | None:
    """The filter's parts (`field`, `operator`, `value` → property name) when the schema, or the first of
    its `oneOf`/`anyOf` options that is an object, is a one-condition filter; None otherwise."""
    found = _filter(schema)
    return found[0] if found is not None else None


def filter_value(schema: Any, seed: str, shape: str | None) -> dict[str, Any] | None:
    """The filter object that finds `seed` (None when the schema is no filter)."""
    found = _filter(schema)
    if found is None:
        return None
    parts, props = found
    equality = lexicon("en").filter_words.get("equality", frozenset())
    operator = next(str(o) for o in props[parts["operator"]]["enum"] if str(o) in equality)
    return {parts["field"]: shape or "name", parts["operator"]: operator, parts["value"]: seed}


def _filter(schema: Any) -> tuple[dict[str, str], Mapping[str, Any]] | None:
    if not isinstance(schema, Mapping):
        return None
    options = [schema, *(o for key in ("oneOf", "anyOf") for o in schema.get(key, []) if isinstance(o, Mapping))]
    words = lexicon("en").filter_words
    for option in options:
        props = option.get("properties")
        if option.get("type") not in ("object", None) or not isinstance(props, Mapping):
            continue
        parts: dict[str, str] = {}
        for name, sub in props.items():
            sub = sub if isinstance(sub, Mapping) else {}
            tokens = set(ordered_tokens(name))
            enum = [str(o) for o in sub.get("enum", [])]
            if "operator" not in parts and set(enum) & words.get("equality", frozenset()):
                parts["operator"] = name
            elif "value" not in parts and tokens & words.get("value", frozenset()):
                parts["value"] = name
            elif "field" not in parts and tokens & words.get("field", frozenset()) and sub.get("type") == "string":
                parts["field"] = name
        if len(parts) == 3:
            return parts, props
    return None

"""Earlier nodes of a plan, and which of their outputs could fill a later node's argument.

An output fits an argument when their JSON types are compatible (`fits`); the grammar offers such
outputs as references (planner/value_grammar.py), and the evidence rules (planner/evidence.py) also
ask whether an earlier output is named like the argument or could supply it at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from planner.argkinds import ArgKind, ordered_tokens
from planner.catalog import ToolDef
from planner.lexicon import Lexicon
from planner.lookups import entity_words, nouns

_COMPATIBLE = {
    "number": {"number", "integer", ""},
    "integer": {"integer", "number", ""},
    "string": {"string", "", "integer", "number"},
    "boolean": {"boolean", ""},
    "array": {"array", ""},
    "object": {"object", ""},
}


def fits(output_kind: str, arg_kind: str) -> bool:
    """Whether an output of JSON type `output_kind` can fill an argument of type `arg_kind` ("": unknown
    or untyped, which fits everything)."""
    return not output_kind or not arg_kind or output_kind in _COMPATIBLE.get(arg_kind, set(_COMPATIBLE))


@dataclass(frozen=True)
class Upstream:
    """An earlier node: its id, tool and (once written) its arguments."""

    node_id: str
    tool: ToolDef
    args: Mapping[str, Any] = field(default_factory=dict)


def same_named_refs(upstream: Sequence[Upstream], arg: str, schema: dict[str, Any], lex: Lexicon) -> tuple[str, ...]:
    """Earlier outputs named like the argument (any naming style), of a type that fits it."""
    wanted = tuple(lex.stem(w) for w in ordered_tokens(arg))
    kind = str(schema.get("type", "")) if isinstance(schema.get("type"), str) else ""
    refs = []
    for up in upstream:
        for path, field_kind in up.tool.output_fields:
            leaf = path.rsplit(".", 1)[-1]
            if tuple(lex.stem(w) for w in ordered_tokens(leaf)) == wanted and fits(field_kind, kind):
                refs.append(f"${up.node_id}.{path}")
    return tuple(refs)


def entity_id_refs(upstream: Sequence[Upstream], arg: str, lex: Lexicon) -> tuple[str, ...]:
    """The identifier an earlier node outputs for the thing an identifier argument names: `segment_id`
    takes `$n1.id` after `segments_create`, `task_gid` `$n2.data.gid` after Asana's `createTask` (the
    thing's own id, at the top or inside the one object that wraps the output; the first such node: the one
    that creates or finds the thing; a later one acting on it outputs the same id). Empty when no earlier
    node acts on that thing."""
    words = entity_words(arg, lex)
    if not words or words == ordered_tokens(arg):
        return ()  # not named as an identifier of something
    wanted = {lex.stem(w) for w in words}
    for up in upstream:
        if not wanted <= {lex.stem(w) for w in nouns(up.tool.name, lex)}:
            continue
        fields = up.tool.output_fields
        ids = [path for path, _ in fields if "." not in path and path.lower() in lex.identifier_words]
        wrapped = [path for path, _ in fields if path.count(".") == 1 and path.rsplit(".", 1)[1].lower()
                   in lex.identifier_words and dict(fields).get(path.split(".")[0]) == "object"]  # fmt: skip
        if ids or len(wrapped) == 1:
            return (f"${up.node_id}.{(ids or wrapped)[0]}",)
    return ()


def could_supply(upstream: Sequence[Upstream], kind: ArgKind, arg: str, lex: Lexicon) -> bool:
    """An earlier node could supply the value: it declares no output (nothing is known), or an output
    field of a fitting type that shares a word with the argument's name."""
    want = {"number": "number", "integer": "integer"}.get(kind.kind, "string")
    words = {lex.stem(w) for w in ordered_tokens(arg)}
    for up in upstream:
        if not up.tool.output_fields and not up.tool.output_type:
            return True
        for path, field_kind in up.tool.output_fields:
            leaf = {lex.stem(w) for w in ordered_tokens(path.rsplit(".", 1)[-1])}
            if fits(field_kind, want) and leaf & words:
                return True
    return False

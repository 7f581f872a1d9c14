"""A first draft of one node's arguments, from the request's values and the earlier nodes' outputs.

The draft is shown to the model as a suggestion (it writes the arguments itself, under the grammar) and
is what the rule-based fallback plans with. Generic rules only:

- a required argument named like an output field of an earlier node (`departure_time` ←
  `$n1.departure_time`, `amount` ← `$n1.tip_amount`) takes that reference unless a request value is
  written right after the argument's own name ("amount of 50");
- otherwise each argument takes the best-ranked request value of its type (planner/values.py: the
  argument's name in the words before the value, inside the node's step, the value's kind), each value
  used by one argument only, best matches first;
- an argument with an enum takes the request value that is one of its options, else its default;
- optional arguments are drafted only when a value is written right after their name, or the schema
  has a default; required ones fall back to the schema default.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from planner.arg_options import unwritable
from planner.argkinds import dateish, ordered_tokens, timeish
from planner.catalog import ToolDef
from planner.lexicon import lexicon, lexicon_for, weights
from planner.lookups import description_keywords
from planner.upstream import Upstream
from planner.values import Candidate, RequestValues, name_tokens


def _cue_match(candidate: Candidate, arg: str) -> int:
    own = {t for t in name_tokens(arg) if len(t) > 2}
    return len(own & set(candidate.cue.split()[-3:]))


_LOOSE_KINDS = ("phrase", "ngram")  # spans cut from the prose: any argument's name may precede one


def cued(values: RequestValues, arg: str, span: tuple[int, int] | None) -> bool:
    """The request writes a definite value (quoted, a number, a date, an address…) right after this
    argument's name ("an amount of 50", 'the message "hi"'), inside the node's step when it is known."""
    return any(
        c.kind not in _LOOSE_KINDS
        and _cue_match(c, arg) > 0
        and (span is None or c.start < 0 or span[0] <= c.start < span[1])
        for c in values.candidates
    )


def _type_ok(candidate: Candidate, schema: dict[str, Any], arg: str) -> bool:
    kind = schema.get("type")
    if kind in ("number", "integer"):
        return candidate.is_number and (kind == "number" or float(candidate.value).is_integer())
    if kind == "array":
        return isinstance(candidate.value, list)
    if kind == "object":
        return isinstance(candidate.value, dict)
    if kind == "boolean":
        return False
    lex = lexicon("en")
    if candidate.is_number and candidate.written:  # a count typed as text: "for 2 nights" → "2"
        words = ordered_tokens(arg)
        return kind in (None, "string") and len(words) > 1 and words[0] in lex.count_words
    if not candidate.is_string:
        return False
    date_arg = dateish(arg, schema, lex)
    time_arg = timeish(arg, lex) and not date_arg
    if candidate.kind == "datetime":
        return date_arg or time_arg
    if candidate.kind == "date":  # a day is not a clock
        return date_arg
    if candidate.kind == "time":
        return time_arg
    return not date_arg or candidate.kind == "quoted"


def _score(candidate: Candidate, arg: str, schema: dict[str, Any], span: tuple[int, int] | None) -> float:
    w, lex = weights().draft, lexicon("en")
    score = w["cue"] * _cue_match(candidate, arg)
    affine = lex.kind_words.get(candidate.kind)
    if affine is not None:  # a phone number belongs to a phone-like argument, whatever words precede it
        score += w["kind_affine"] if name_tokens(arg) & affine else w["kind_foreign"]
    description = {w_ for w_ in re.findall(r"[a-z]+", str(schema.get("description", "")).lower()) if len(w_) > 3}
    score += w["description"] * len(description & set(candidate.cue.split()))
    if span is not None and candidate.start >= 0:
        score += w["in_step"] if span[0] <= candidate.start < span[1] else w["out_of_step"]
    score += weights().draft_kind.get(candidate.kind, 0.0)
    return score


_WORD = re.compile(r"[a-z0-9]+")
_REF_TYPES = {
    "number": {"number", "integer", ""},
    "integer": {"integer", "number", ""},
    "string": {"string", "", "number", "integer"},
    "array": {"array", ""},
    "object": {"object", ""},
    "boolean": {"boolean", ""},
}


def _head(name: str) -> str:
    """The last word of a name (`tip_amount` → "amount"): what the thing is."""
    parts = [p.lower() for p in re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", name) if p]
    return parts[-1] if parts else ""


def _mentioned(name: str, words: set[str]) -> bool:
    """Every word of a field name occurs in the text (singular or plural)."""
    parts = [p.lower() for p in re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", name) if p]
    return bool(parts) and all(p in words or f"{p}s" in words or (p.endswith("s") and p[:-1] in words) for p in parts)


def reference_options(
    arg: str, schema: dict[str, Any], step: str, upstream: Sequence[Upstream]
) -> list[tuple[float, str]]:
    """Scored references an argument could take: an earlier output field the step names ("the gross
    salary"), one named like the argument, or the latest output when the step says "it"/"that"."""
    words = set(_WORD.findall(step.lower()))
    head = _head(arg)
    anaphora = bool(lexicon_for(step).anaphora.search(step))
    w = weights().reference
    kinds = _REF_TYPES.get(str(schema.get("type", "")), set(_REF_TYPES))
    wanted = str(schema.get("type", ""))
    out: list[tuple[float, str]] = []
    for distance, up in enumerate(reversed(upstream)):
        fields = [(p, k) for p, k in up.tool.output_fields if k in kinds or not wanted]
        named = any(p.rsplit(".", 1)[-1] == arg or _head(p) == head for p, _ in fields)
        for rank_in_tool, (path, field_kind) in enumerate(fields):
            leaf = path.rsplit(".", 1)[-1]
            score = 0.0
            if _mentioned(leaf, words):
                score += w["mentioned"]
            if leaf == arg:
                score += w["same_name"]
            elif head and _head(leaf) == head:
                score += w["same_head"]
            if anaphora and distance == 0:
                score += w["anaphora"] + (w["anaphora_first"] if rank_in_tool == 0 and not named else 0.0)
            if score > 0:
                mismatch = field_kind and wanted and field_kind != wanted
                score += w["type_match"] if field_kind == wanted else (w["type_mismatch"] if mismatch else 0.0)
                out.append((score - w["distance"] * distance, f"${up.node_id}.{path}"))
        if not fields and anaphora and distance == 0:
            out.append((w["whole_anaphora"], f"${up.node_id}"))
    return sorted(out, key=lambda item: -item[0])


def draft_args(
    tool: ToolDef,
    values: RequestValues,
    span: tuple[int, int] | None,
    upstream: Sequence[Upstream],
    preferred: dict[str, list[Any]] | None = None,
    step: str = "",
    *,
    defaults: bool = False,
) -> dict[str, Any]:
    """The arguments the request's values, the earlier nodes' literals and references fill; a schema
    default is written for a required argument, and for an optional one only with `defaults` (data sets
    whose gold plans spell defaults out: planner.stages.defaults): otherwise the service's own applies."""
    preferred = preferred or {}
    required = set(tool.required)
    draft: dict[str, Any] = {}
    options: list[tuple[float, str, Any, int | None]] = []  # score, argument, value, candidate index
    for arg in tool.arg_names():
        schema = tool.properties.get(arg) or {}
        if arg in preferred and preferred[arg]:
            draft[arg] = preferred[arg][0]
            continue
        if arg not in required and unwritable(schema, arg):
            continue  # deprecated, the service's own, or a credential the connection supplies
        if "enum" in schema:
            enum = {str(v).lower(): v for v in schema["enum"]}
            hit = next((c for c in values.strings() if str(c.value).lower() in enum and _cue_match(c, arg)), None)
            hit = hit or next((c for c in values.strings() if str(c.value).lower() in enum), None)
            if hit is not None:
                draft[arg] = enum[str(hit.value).lower()]
            elif "default" in schema and (defaults or arg in required):
                draft[arg] = schema["default"]
            continue
        keywords = description_keywords(schema, arg) if arg in required else []
        for number, candidate in enumerate(values.candidates):
            if _type_ok(candidate, schema, arg) and (not keywords or _cue_match(candidate, arg) > 0):
                options.append((_score(candidate, arg, schema, span), arg, candidate.value, number))
        # an argument with a keyword of its own ("use the `me` keyword") takes it unless a value is cued to it
        options += [(weights().draft["floor"], arg, keyword, None) for keyword in keywords[:1]]
        for up in reversed(upstream):  # the same argument of an earlier node: keep its literal value
            earlier = up.args.get(arg)
            if earlier is not None and not (isinstance(earlier, str) and earlier.startswith("$")):
                options.append((weights().draft["earlier_literal"], arg, earlier, None))
                break
        if arg in required:
            options += [(score, arg, ref, None) for score, ref in reference_options(arg, schema, step, upstream)]
    used: set[int] = set()
    used_refs: set[str] = set()
    options.sort(key=lambda o: -o[0])
    for score, arg, value, position in options:
        index = position
        is_ref = isinstance(value, str) and value.startswith("$")
        if arg in draft or (index is not None and index in used) or (is_ref and value in used_refs):
            continue
        cued_here = index is not None and _cue_match(values.candidates[index], arg) > 0
        if arg not in required and not cued_here and score < weights().draft["optional_min"]:
            continue
        if score < weights().draft["floor"] and arg not in required:
            continue
        if isinstance(value, (int, float)) and (tool.properties.get(arg) or {}).get("type") == "string":
            value = str(value)
        draft[arg] = value
        if index is not None:
            used.add(index)
        elif is_ref:
            used_refs.add(value)
    for arg in tool.arg_names():
        schema = tool.properties.get(arg) or {}
        if arg not in draft and "default" in schema and (arg in required or (defaults and "enum" not in schema)):
            draft[arg] = schema["default"]
    return {arg: draft[arg] for arg in tool.arg_names() if arg in draft}

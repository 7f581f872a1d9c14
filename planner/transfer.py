"""Memory that transfers: a solved plan's structure reused for a request of the same shape.

A corrected plan for "flights from Boston to Denver on May 2" teaches the plan for "flights from Paris
to Rome on June 9": the same tools, the same data flow (references) and the same argument provenance —
`origin` took the value after "from", `date` the ISO form of the date — refilled from the new request.

- `template(text)`: the request with every value (names, numbers, dates, quoted text, codes...) replaced
  by a placeholder of its kind, so two requests of one shape compare as near-equal whatever their values
  (the skeleton rule compares these as well as the raw requests: planner/service.py);
- `carry_values(demo, values)`: per node of the demonstration, each literal argument refilled from the
  new request: the value of the same kind (an address of the same shape) found at the same role (the
  same words before it, else the same rank among values of its kind; an optional argument only by its
  role; an identifier, e-mail, URL or phone argument only by a value of its shape), in the same form (as
  written, its ISO reading, a number, a number as text). A literal the demonstration's request never
  wrote is a constant of the structure and is kept; one whose role the new request does not fill is left
  to the model.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from contract.demonstrations import Demonstration
from planner.argkinds import classify
from planner.catalog import ToolCatalog
from planner.value_shapes import ADDRESS_KINDS, shape, shaped_as
from planner.values import Candidate, RequestValues, extract

_PLACEHOLDER = {
    "date": "<date>",
    "datetime": "<date>",
    "time": "<time>",
    "number": "<number>",
    "expression": "<number>",
    "email": "<email>",
    "url": "<url>",
    "phone": "<phone>",
    "coordinates": "<point>",  # a written "lat,lng" pair (its latitude and longitude are inside it)
    "code": "<code>",
    "quoted": "<text>",
    "filename": "<file>",
    "phrase": "<name>",
    "list": "<list>",
    "object": "<object>",
}
_CLASS = {"datetime": "date", "expression": "number"}
_STRINGS = ("phrase", "quoted", "filename", "code", "email", "url", "phone", "ngram")


def template(values: RequestValues) -> str:
    """The request with its values replaced by placeholders of their kind (n-grams stay words)."""
    text = values.text
    spans: list[tuple[int, int, str]] = []
    for c in values.candidates:
        if c.kind not in _PLACEHOLDER or c.start < 0 or not c.written:
            continue
        if any(c.start < end and start < c.end for start, end, _ in spans):
            continue
        spans.append((c.start, c.end, _PLACEHOLDER[c.kind]))
    for start, end, mark in sorted(spans, reverse=True):
        text = text[:start] + mark + text[end:]
    return text


def _class(c: Candidate) -> str:
    """Values of one class refill each other; an address (e-mail, URL, phone) is refilled only by an
    address of its shape, however it was written ('Quarterly review' never takes priya@example.com's place)."""
    if (found := shape(c)) in ADDRESS_KINDS:
        return found
    kind = _CLASS.get(c.kind, c.kind)
    return "string" if kind in _STRINGS else kind


def _source(value: Any, values: RequestValues) -> Candidate | None:
    """The demonstration request's value a literal came from (its ISO reading or its number as text
    count), or None for a constant."""
    for c in values.candidates:
        if c.value == value and type(c.value) is type(value) or (c.iso and c.iso == value):
            return c if c.written or c.iso == value else None
    if isinstance(value, str):
        lowered = value.strip().lower()
        for c in values.candidates:
            if isinstance(c.value, str) and c.value.strip().lower() == lowered:
                return c
            if c.is_number and str(c.value) == value:
                return c
    return None


def _form(value: Any, source: Candidate) -> str:
    if source.iso and value == source.iso:  # the ISO reading (also when the request wrote it so)
        return "iso"
    if isinstance(value, str) and source.is_number:
        return "number_text"
    return "as_written"


def _written(values: RequestValues) -> list[Candidate]:
    return [c for c in values.candidates if c.written and c.start >= 0]


def _counterpart(source: Candidate, demo: RequestValues, new: RequestValues, *, by_rank: bool) -> Candidate | None:
    """The new request's value at the same role: same class and the same word before it, else (`by_rank`)
    the same rank among values of its class."""
    cls = _class(source)
    mine = [c for c in _written(demo) if _class(c) == cls and c.kind != "ngram" or c is source]
    theirs = [c for c in _written(new) if _class(c) == cls and c.kind != "ngram"]
    if not theirs:
        return None
    last = source.cue.split()[-1:] if source.cue else []
    same_cue = [c for c in theirs if last and c.cue.split()[-1:] == last]
    if len(same_cue) == 1:
        return same_cue[0]
    if not by_rank:
        return None
    rank_in_demo = next((i for i, c in enumerate(mine) if c is source), None)
    if rank_in_demo is not None and rank_in_demo < len(theirs):
        return theirs[rank_in_demo]
    return None


def _takes(arg: str, schema: Any, c: Candidate) -> bool:
    """An identifier, e-mail, URL or phone argument takes only values of its shape (planner/value_shapes.py)."""
    kind = classify(arg, schema)
    return not (kind.is_identifier or kind.kind in ADDRESS_KINDS) or shaped_as(c, kind)


def _render(candidate: Candidate, form: str, new: RequestValues) -> Any:
    if form == "iso" and candidate.iso:
        return candidate.iso
    if form == "number_text" and candidate.is_number:
        return str(candidate.value)
    return candidate.value


def carry_values(
    demo: Demonstration, values: RequestValues, today: date, catalog: ToolCatalog | None = None
) -> list[dict[str, Any]]:
    """Per node of `demo`'s plan: argument → its literal refilled from `values` (the new request);
    references are left to the skeleton, unknown roles to the model. With the `catalog`, an optional
    argument is refilled only from the value at the same role (the same word before it), never by rank
    alone: "the last 10 versions" refilled from "frame 1:2" would be a size nobody asked for."""
    shown = extract(demo.request, today)
    out: list[dict[str, Any]] = []
    for node in demo.plan.get("nodes", []):
        args = node.get("args", {}) if isinstance(node, dict) else {}
        name = node.get("tool") if isinstance(node, dict) else None
        tool = catalog.get(name) if catalog is not None and isinstance(name, str) and name in catalog else None
        carried: dict[str, Any] = {}
        for arg, value in args.items():
            if isinstance(value, str) and value.startswith("$"):
                carried[arg] = value
                continue
            if isinstance(value, (dict, list)):
                continue
            source = _source(value, shown)
            if source is None:
                carried[arg] = value  # a constant of the structure
                continue
            by_rank = tool is None or arg in tool.required
            counterpart = _counterpart(source, shown, values, by_rank=by_rank)
            if counterpart is not None and tool is not None and not _takes(arg, tool.properties.get(arg), counterpart):
                continue  # the value at the same role is not of the argument's kind: left to the evidence
            if counterpart is not None:
                carried[arg] = _render(counterpart, _form(value, source), values)
        out.append(carried)
    return out

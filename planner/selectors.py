"""Arguments that select properties of the resource instead of carrying a value of the request.

YouTube's `part` ("identifies the properties that the write operation will set", "… resource properties
that the API response will include") and Google's `updateMask` ("Mask that identifies which fields on the
course to update") take property names, never words of the request: left open, the model filled `part`
with request phrases ("tutorials" six times). What they take, read from the argument's own description:

- a selector of what a call *sets* takes the names of the other arguments the node writes (not the
  identifiers that address the resource, nor the selector itself): `part: ["snippet", "status"]` for a
  playlist written with a snippet and a status, `updateMask: "courseState"`; it is completed once the
  node's arguments are known (`complete`), and left out when optional and nothing else is written;
- a selector of what a call *returns* takes the value its description says to set ("Set the parameter
  value to snippet"), else the part names it lists that the output declares ("The part names that you can
  include in the parameter value are id and snippet"), else one of the output's object fields (the model's
  choice among real names: `options`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.argkinds import classify
from planner.catalog import ToolCatalog, ToolDef

_WRITES = re.compile(
    r"\b(?:properties|fields|parts)\b[^.]{0,60}?\b(?:write operation will set|to update|(?:will|to) be updated)\b",
    re.IGNORECASE,
)
_READS = re.compile(r"\b(?:properties|parts)\b[^.]{0,60}?\bresponse (?:will include|returns)\b", re.IGNORECASE)
_SET_TO = re.compile(r"\bset the parameter value to\s+[`'\"]?([A-Za-z_]\w*)", re.IGNORECASE)
_LISTED = re.compile(r"\b(?:part names|part properties|supported values)\b[^.]*", re.IGNORECASE)


@dataclass(frozen=True)
class Selector:
    writes: bool  # it names what the call sets (else what it returns)
    listed: bool  # its value is a JSON list (else a comma-separated string)
    keyword: str | None  # the value its description says to set


def selector(schema: Any) -> Selector | None:
    """The argument selects the resource's properties (module docstring), or None."""
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    items = schema.get("items")
    listed = kind == "array" and isinstance(items, Mapping) and items.get("type") == "string"
    if not (listed or kind == "string") or schema.get("enum"):
        return None
    text = str(schema.get("description") or "")
    writes = bool(_WRITES.search(text))
    if not writes and not _READS.search(text):
        return None
    keyword = _SET_TO.search(text)
    return Selector(writes and keyword is None, listed, keyword.group(1) if keyword else None)


def _value(names: list[str], sel: Selector) -> Any:
    return list(names) if sel.listed else ",".join(names)


def _parts(tool: ToolDef) -> list[str]:
    """The object fields of what the tool returns (of its list's first item when it returns a list)."""
    fields = dict(tool.output_fields)
    listed = [p for p, k in fields.items() if k == "array" and f"{p}.0.id" in fields]
    prefix = f"{listed[0]}.0." if listed else ""
    out = []
    for path, kind in fields.items():
        rest = path[len(prefix) :] if path.startswith(prefix) else None
        if rest and "." not in rest and (kind == "object" or rest == "id"):
            out.append(rest)
    return out


def selector_options(tool: ToolDef, arg: str, sel: Selector) -> tuple[Any, ...]:
    """The values the selector may take before the node's other arguments are known."""
    if sel.keyword is not None:
        return (_value([sel.keyword], sel),)
    if sel.writes:  # completed from what the node writes (`complete`); this stands in while it is decoded
        nested = [a.split(".")[0] for a in tool.arg_names() if "." in a]  # a flat view's object fields
        parts = [a for a in tool.arg_names() if a != arg and _is_part(tool, a)]
        objects = [a for a in parts if tool.properties.get(a, {}).get("type") == "object"]
        first = nested or objects or parts
        return (_value(first[:1] or [arg], sel),)
    parts = _parts(tool)
    text = str(tool.properties.get(arg, {}).get("description") or "")
    named = [p for p in parts if any(re.search(rf"\b{re.escape(p)}\b", m.group(0)) for m in _LISTED.finditer(text))]
    if named:
        return (_value(named, sel),)
    return tuple(_value([p], sel) for p in parts if p != "id")


def _is_part(tool: ToolDef, arg: str) -> bool:
    """An argument that writes a part of the resource: not an identifier addressing it, not a selector."""
    schema = tool.properties.get(arg)
    return selector(schema) is None and not classify(arg, schema).is_identifier


def complete_plan(candidate: Mapping[str, Any], catalog: ToolCatalog) -> dict[str, Any]:
    """A plan (arguments nested as the catalog declares them) with its selectors completed (`complete`)."""
    nodes = candidate.get("nodes")
    if not isinstance(nodes, list):
        return dict(candidate)
    done = [
        {**node, "args": complete(catalog.get(node["tool"]), node["args"])}
        if isinstance(node, dict) and node.get("tool") in catalog and isinstance(node.get("args"), dict)
        else node
        for node in nodes
    ]
    return {**candidate, "nodes": done}


def complete(tool: ToolDef, args: Mapping[str, Any]) -> dict[str, Any]:
    """`args` with each selector of what the call sets naming the other arguments written (in the tool's
    order; object arguments only where the selector is a list of parts, as YouTube's `part`)."""
    out = dict(args)
    for arg, schema in tool.properties.items():
        sel = selector(schema)
        if sel is None or not sel.writes:
            continue
        written = [
            a
            for a in tool.arg_names()
            if a != arg and a in out and _is_part(tool, a) and (not sel.listed or isinstance(out[a], Mapping))
        ]
        if written:
            out[arg] = _value(written, sel)
        elif arg not in tool.required:
            out.pop(arg, None)
    return out

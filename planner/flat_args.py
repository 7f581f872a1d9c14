"""Object arguments planned field by field: `body.start.dateTime` instead of one `body` object.

Real APIs take most of what a request says inside objects — a request body (`body.summary`,
`body.start.dateTime`), an amount (`amount.currency`, `amount.value`), an access scope (`scope.value`).
The planner's rules (evidence, ties, formats, lookups) decide one value at a time, so a tool is planned
through its *flat view*: every field of an object argument that declares its properties becomes an
argument of its own, named by its path (an optional list of objects contributes its first item: `attendees.0.email`),
down to `MAX_DEPTH` levels and `MAX_LEAVES` fields per tool. A field is required when it and every
object above it are required. Catalog argument names never hold a dot (planner/catalog.py `ARG_NAME_RE`),
so a dotted name is always a path.

The plan the model writes over flat views is nested back (`nest_plan`) before it is validated against the
catalog as given; demonstrations are flattened the same way (`flat_demo`) so that their structure and
values transfer field by field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contract.demonstrations import Demonstration
from planner.argkinds import classify
from planner.catalog import ToolCatalog, ToolDef
from planner.query_filters import filter_object

SEP = "."
INNER_REQUIRED = "x-planstack-required-in-object"  # the flat view's fields its objects require
OBJECTS = "x-planstack-required-objects"  # the required objects planned field by field (written even empty)
MAX_DEPTH = 3  # object levels expanded below an argument
MAX_LEAVES = 160  # fields of one tool's flat view (more: its deepest objects stay whole)


def flat_tool(tool: ToolDef) -> ToolDef:
    """The tool's flat view (the tool itself when no argument is an object with declared properties)."""
    props = tool.properties
    required = set(tool.required)
    if not any(
        _expandable(schema) is not None or (_expandable(_items(schema)) is not None and name not in required)
        for name, schema in props.items()
    ):
        return tool
    for depth in range(MAX_DEPTH, 0, -1):
        flat: dict[str, Any] = {}
        needed: list[str] = []
        inner: list[str] = []
        objects: list[str] = []
        for name, schema in props.items():
            _leaves(name, schema, name in required, depth, _Out(flat, needed, inner, objects))
        if len(flat) <= MAX_LEAVES:
            break
    parameters = {**tool.parameters, "properties": flat, "required": needed, INNER_REQUIRED: inner, OBJECTS: objects}
    return replace(tool, parameters=parameters)


def field_depth(name: str) -> int:
    """How deeply a field of a flat view is nested, list items not counted: `body.start.dateTime` 2,
    `body.attendees.0.email` 2, a top-level argument 0."""
    return sum(1 for part in name.split(SEP)[1:] if not part.isdigit())


def field_name(name: str) -> str:
    """The name a field of a flat view has in its own object: `snippet.resourceId.videoId` → `videoId`,
    `body.attendees.0.email` → `email` (a top-level argument is its own name)."""
    parts = [part for part in name.split(SEP) if not part.isdigit()]
    return parts[-1] if parts else name


def flat_catalog(catalog: ToolCatalog) -> ToolCatalog:
    """The catalog of flat views (the catalog itself when no tool changes)."""
    tools = [flat_tool(tool) for tool in catalog]
    if all(a is b for a, b in zip(tools, catalog, strict=True)):
        return catalog
    return ToolCatalog.from_defs(tools)


def siblings(tool: ToolDef, field: str) -> list[str]:
    """The fields a written field brings along: the fields every object above it requires, down through
    the objects it requires (writing `body.reference` writes `body`, which requires `body.amount`, which
    requires `body.amount.currency` and `body.amount.value`)."""
    inner = tool.parameters.get(INNER_REQUIRED, [])

    def children(prefix: str) -> list[str]:
        return [n for n in inner if n.startswith(prefix + SEP) and SEP not in n[len(prefix) + 1 :]]

    def closure(name: str) -> list[str]:
        return [name] if name in tool.properties else [leaf for child in children(name) for leaf in closure(child)]

    parts = field.split(SEP)
    out: list[str] = []
    for end in range(1, len(parts)):
        for child in children(SEP.join(parts[:end])):
            if child != field and not field.startswith(child + SEP):
                out += [leaf for leaf in closure(child) if leaf not in out]
    return out


def nest_args(args: Mapping[str, Any], objects: Sequence[str] = ()) -> dict[str, Any]:
    """`{"amount.currency": "EUR", "amount.value": 2550}` → `{"amount": {"currency": "EUR", "value": 2550}}`
    (`name.0.field` builds a list of one object); null fields are dropped, and an object with no field
    written is left out unless it is one of the required `objects` (then written empty)."""
    out: dict[str, Any] = {}
    for path in objects:  # (a required object's own required fields are required arguments of the view)
        level = out
        for part in path.split(SEP):
            level = level.setdefault(part, {})
    for key, value in args.items():
        if SEP not in key:
            out[key] = value
            continue
        if value is None:
            continue
        parts = key.split(SEP)
        node: Any = out
        for part, after in zip(parts, parts[1:], strict=False):
            child: Any = [] if after == "0" else {}
            if isinstance(node, list):
                if not node:
                    node.append(child)
                node = node[0]
                continue
            existing = node.get(part)
            if not isinstance(existing, (dict, list)):
                node[part] = child
            node = node[part]
        if isinstance(node, list):
            node[:] = [value]
        else:
            node[parts[-1]] = value
    return out


def nest_plan(candidate: Mapping[str, Any], views: ToolCatalog) -> dict[str, Any]:
    """A plan written over the flat `views`, its arguments nested as the catalog declares them."""
    nodes = candidate.get("nodes")
    if not isinstance(nodes, list):
        return dict(candidate)

    def objects(tool: Any) -> Sequence[str]:
        return views.get(tool).parameters.get(OBJECTS, ()) if isinstance(tool, str) and tool in views else ()

    nested = [
        {**node, "args": nest_args(node["args"], objects(node.get("tool")))}
        if isinstance(node, dict) and isinstance(node.get("args"), dict)
        else node
        for node in nodes
    ]
    return {**candidate, "nodes": nested}


def flat_demo(demo: Demonstration, catalog: ToolCatalog) -> Demonstration:
    """A demonstration whose nested arguments are written as the flat views' fields (unchanged when none of
    its tools has a flat view)."""
    nodes = demo.plan.get("nodes")
    if not isinstance(nodes, list):
        return demo
    changed = False
    flat_nodes: list[Any] = []
    for node in nodes:
        tool = node.get("tool") if isinstance(node, dict) else None
        args = node.get("args") if isinstance(node, dict) else None
        if not isinstance(tool, str) or tool not in catalog or not isinstance(args, dict):
            flat_nodes.append(node)
            continue
        fields = catalog.get(tool).properties
        flat = _flatten_values(args, fields)
        changed = changed or flat != args
        flat_nodes.append({**node, "args": flat})
    return replace(demo, plan={**demo.plan, "nodes": flat_nodes}) if changed else demo


# ------------------------------------------------------------------------------------------------------
def _expandable(schema: Any) -> Mapping[str, Any] | None:
    """The object schema whose fields are planned one by one: an object with declared properties, or the
    first such option of a `oneOf`/`anyOf` made of objects only (a union with a scalar stays whole)."""
    if not isinstance(schema, Mapping) or filter_object(schema) is not None:
        return None  # (a search condition is written whole: planner/query_filters.py)
    if schema.get("type") == "object" and isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        return schema
    for key in ("oneOf", "anyOf"):
        options = [o for o in schema.get(key, []) if isinstance(o, Mapping) and o.get("type") != "null"]
        if options and all(o.get("type") in ("object", None) and "properties" in o for o in options):
            return options[0] if isinstance(options[0].get("properties"), Mapping) else None
    return None


def _items(schema: Any) -> Any:
    """The item schema of an array schema (None otherwise)."""
    return schema.get("items") if isinstance(schema, Mapping) and schema.get("type") == "array" else None


@dataclass
class _Out:
    fields: dict[str, Any]
    required: list[str]  # required in the tool (every object above them required too)
    inner: list[str]  # required by the object they are in
    objects: list[str]  # required objects (every object above them required too)


def _leaves(path: str, schema: Any, required: bool, depth: int, out: _Out, inner_required: bool = False) -> None:
    obj = _expandable(schema) if depth > 0 else None
    # a list of objects only when optional: a required one needs at least an item the view cannot promise
    listed = _expandable(_items(schema)) if depth > 0 and not required else None
    if (obj is not None or listed is not None) and inner_required:
        out.inner.append(path)  # (an object its own object requires)
    if obj is not None:
        if required:
            out.objects.append(path)
        inner = set(obj.get("required", []))
        for name, sub in obj["properties"].items():
            _leaves(f"{path}{SEP}{name}", sub, required and name in inner, depth - 1, out, name in inner)
        return
    if listed is not None:  # a list of objects: its first item, field by field
        inner = set(listed.get("required", []))
        for name, sub in listed["properties"].items():
            _leaves(f"{path}{SEP}0{SEP}{name}", sub, False, depth - 1, out, name in inner)
        return
    out.fields[path] = dict(schema) if isinstance(schema, Mapping) else {}
    if required:
        out.required.append(path)
    if inner_required:
        out.inner.append(path)


def _flatten_values(args: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """Nested argument values → the flat fields that exist (a value with no such field is kept whole)."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if prefix in fields or not isinstance(value, (dict, list)):
            out[prefix] = value
            return
        if isinstance(value, list):
            if len(value) == 1 and any(f.startswith(f"{prefix}{SEP}0{SEP}") for f in fields):
                walk(f"{prefix}{SEP}0", value[0])
            else:
                out[prefix] = value
            return
        if not any(f.startswith(prefix + SEP) for f in fields):
            out[prefix] = value
            return
        for key, inner in value.items():
            walk(f"{prefix}{SEP}{key}", inner)

    for name, value in args.items():
        walk(name, value)
    return out


def list_item(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """An array schema's item schema, described by the list's own description where the items have none
    ("Array of project gids" for items of no text): what one item of the list is (None without items)."""
    items = schema.get("items")
    if not isinstance(items, dict):
        return None
    return {**items, "description": str(items.get("description") or schema.get("description") or "")}


def id_items_view(tool: ToolDef) -> ToolDef:
    """The tool with each optional list of identifiers (Asana's `data.projects`, "Array of project gids",
    items "Gid of a project.") seen as one identifier of its items' kind: the request that names one such
    thing ("to the Website Relaunch project") gets its lookup like any named identifier, and the list then
    takes that one reference (planner/evidence.py). The tool itself when it has no such list."""
    props = tool.properties
    changed: dict[str, Any] = {}
    for arg, schema in props.items():
        if arg in tool.required or not isinstance(schema, dict) or schema.get("type") != "array":
            continue
        item = list_item(schema)
        if item is None or item.get("type") != "string":
            continue
        if classify(arg, item).is_identifier:
            changed[arg] = item
    if not changed:
        return tool
    return replace(tool, parameters={**tool.parameters, "properties": {**props, **changed}})

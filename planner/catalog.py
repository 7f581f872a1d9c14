"""The tool catalog the planner plans over, built from the OpenAI `tools` format and checked at the door.

`[{"type": "function", "function": {"name", "description", "parameters", "output_schema"?}}]`.
`output_schema` is a planstack extension (a JSON Schema of the tool's output): when present, the
grammar can offer references to the output's fields as an enum instead of free `$nK.path` strings.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from planner.safe_regex import FORMAT_CHECKER, pattern_problems

TOOL_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]{0,63}$")
ARG_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_TOOLS = 128
MAX_ARGS = 32
MAX_SCHEMA_DEPTH = 6
MAX_SCHEMA_NODES = 400
MAX_ENUM = 200
MAX_DESCRIPTION = 1000
FUNCTION_KEYS = {"name", "description", "parameters", "output_schema", "strict"}


class CatalogError(ValueError):
    """Bad tool definitions; `problems` lists each one with where it is."""

    retryable = False

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid tool catalog: " + "; ".join(self.problems))


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    parameters: Mapping[str, Any]
    output_fields: tuple[tuple[str, str], ...] = ()  # (field path, JSON type or "")
    output_type: str = ""  # the declared output's JSON type ("" when the tool declares none)

    @property
    def properties(self) -> dict[str, Any]:
        return dict(self.parameters.get("properties", {}))

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.parameters.get("required", ()))

    def arg_names(self) -> tuple[str, ...]:
        """Required arguments first (in declared order), then the optional ones."""
        props = list(self.properties)
        req = [name for name in props if name in self.required]
        return (*req, *(name for name in props if name not in self.required))

    def to_openai(self) -> dict[str, Any]:
        function: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
        }
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class ToolCatalog:
    tools: tuple[ToolDef, ...]
    hash: str = field(default="", compare=False)

    def __iter__(self) -> Iterator[ToolDef]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __contains__(self, name: object) -> bool:
        return any(tool.name == name for tool in self.tools)

    def names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    def get(self, name: str) -> ToolDef:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)

    def subset(self, names: Sequence[str]) -> ToolCatalog:
        return ToolCatalog.from_defs([self.get(name) for name in names])

    @classmethod
    def from_defs(cls, tools: Sequence[ToolDef]) -> ToolCatalog:
        return cls(tuple(tools), _catalog_hash(tools))

    @classmethod
    def from_openai(cls, tools: Any) -> ToolCatalog:
        """Validate OpenAI-format tool definitions; raise CatalogError listing every problem."""
        problems: list[str] = []
        if not isinstance(tools, list) or not tools:
            raise CatalogError(["tools must be a non-empty list of {type: function, function: {...}}"])
        if len(tools) > MAX_TOOLS:
            raise CatalogError([f"at most {MAX_TOOLS} tools, got {len(tools)}"])
        defs: list[ToolDef] = []
        seen: set[str] = set()
        for index, entry in enumerate(tools):
            where = f"tools[{index}]"
            tool = _parse_tool(entry, where, problems)
            if tool is None:
                continue
            if tool.name in seen:
                problems.append(f"{where}.function.name: duplicate tool name {tool.name!r}")
            seen.add(tool.name)
            defs.append(tool)
        if problems:
            raise CatalogError(problems)
        return cls.from_defs(defs)


def _parse_tool(entry: Any, where: str, problems: list[str]) -> ToolDef | None:
    if not isinstance(entry, dict) or entry.get("type") != "function" or not isinstance(entry.get("function"), dict):
        problems.append(f"{where}: expected {{'type': 'function', 'function': {{...}}}}")
        return None
    function: dict[str, Any] = entry["function"]
    unknown = sorted(set(function) - FUNCTION_KEYS)
    if unknown:
        problems.append(f"{where}.function: unknown keys {unknown}")
    name = function.get("name")
    if not isinstance(name, str) or not TOOL_NAME_RE.match(name):
        problems.append(f"{where}.function.name: {name!r} must match {TOOL_NAME_RE.pattern}")
        return None
    description = function.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        problems.append(f"{where}.function.description: a string of at most {MAX_DESCRIPTION} characters")
        description = ""
    parameters = inline_refs(function.get("parameters") or {"type": "object", "properties": {}}, where, problems)
    before = len(problems)
    _check_parameters(parameters, f"{where}.function.parameters", problems)
    output = function.get("output_schema")
    if output is not None:
        output = inline_refs(output, f"{where}.function.output_schema", problems)
        _check_schema(output, f"{where}.function.output_schema", problems)
    if len(problems) > before:
        return None
    params = dict(parameters)
    params.setdefault("properties", {})
    params.setdefault("type", "object")
    if not isinstance(output, dict):
        return ToolDef(name, description.strip(), params)
    return ToolDef(name, description.strip(), params, output_fields(output), output_type(output))


def _check_parameters(parameters: Any, where: str, problems: list[str]) -> None:
    if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
        problems.append(f"{where}: must be a JSON Schema of type object")
        return
    if not _check_schema(parameters, where, problems):
        return
    props = parameters.get("properties", {})
    if not isinstance(props, dict):
        problems.append(f"{where}.properties: must be an object")
        return
    if len(props) > MAX_ARGS:
        problems.append(f"{where}.properties: at most {MAX_ARGS} arguments, got {len(props)}")
    for arg in props:
        if not ARG_NAME_RE.match(arg):
            problems.append(f"{where}.properties: argument name {arg!r} must match {ARG_NAME_RE.pattern}")
    required = parameters.get("required", [])
    missing = [name for name in required if name not in props]
    if missing:
        problems.append(f"{where}.required: {missing} are not in properties")


def _check_schema(schema: Any, where: str, problems: list[str]) -> bool:
    unsafe = pattern_problems(schema, where)  # patterns are matched with RE2 only: refuse what it cannot take
    if unsafe:
        problems.extend(unsafe)
        return False
    try:
        Draft202012Validator.check_schema(schema, format_checker=FORMAT_CHECKER)
    except SchemaError as exc:
        problems.append(f"{where}: not a valid JSON Schema ({exc.message})")
        return False
    depth, nodes, bad = _measure(schema, 0)
    if depth > MAX_SCHEMA_DEPTH:
        problems.append(f"{where}: nested {depth} levels deep, at most {MAX_SCHEMA_DEPTH}")
    if nodes > MAX_SCHEMA_NODES:
        problems.append(f"{where}: {nodes} schema nodes, at most {MAX_SCHEMA_NODES}")
    problems.extend(f"{where}: {message}" for message in bad)
    return True


def _measure(schema: Any, depth: int) -> tuple[int, int, list[str]]:
    """(max depth, node count, unsupported constructs) of a JSON Schema."""
    if isinstance(schema, list):
        results = [_measure(item, depth) for item in schema]
        return (
            max((r[0] for r in results), default=depth),
            sum(r[1] for r in results),
            [m for r in results for m in r[2]],
        )
    if not isinstance(schema, dict):
        return depth, 1, []
    bad: list[str] = []
    if "$ref" in schema:
        bad.append("$ref is not supported (inline the definition)")
    if isinstance(schema.get("enum"), list) and len(schema["enum"]) > MAX_ENUM:
        bad.append(f"enum with {len(schema['enum'])} values, at most {MAX_ENUM}")
    max_depth, nodes = depth, 1
    for key, value in schema.items():
        if key in {"enum", "const", "default", "examples", "description", "title"}:
            continue
        child_depth = depth + 1 if key in {"properties", "items", "anyOf", "oneOf", "allOf"} else depth
        if key == "properties" and isinstance(value, dict):
            value = list(value.values())
        d, n, b = _measure(value, child_depth)
        max_depth, nodes = max(max_depth, d), nodes + n
        bad.extend(b)
    return max_depth, nodes, bad


def inline_refs(schema: Any, where: str, problems: list[str]) -> Any:
    """The schema with local `#/$defs/<name>` references replaced by their definitions (bounded depth)."""
    if not isinstance(schema, dict):
        return schema
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def walk(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [walk(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        if isinstance(node.get("$ref"), str):
            name = node["$ref"].rsplit("/", 1)[-1]
            if not node["$ref"].startswith(("#/$defs/", "#/definitions/")) or name not in defs:
                problems.append(f"{where}: unresolvable $ref {node['$ref']!r} (only local #/$defs are inlined)")
                return {}
            if depth > MAX_SCHEMA_DEPTH:
                problems.append(f"{where}: $ref {node['$ref']!r} nests too deep (recursive?)")
                return {}
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**defs[name], **rest}, depth + 1)
        return {k: walk(v, depth) for k, v in node.items() if k not in ("$defs", "definitions")}

    return walk(schema, 0)


def _unwrap_nullable(schema: Any) -> Any:
    if isinstance(schema, dict) and isinstance(schema.get("anyOf"), list):
        options = [o for o in schema["anyOf"] if not (isinstance(o, dict) and o.get("type") == "null")]
        if len(options) == 1 and isinstance(options[0], dict):
            return {**options[0], **{k: v for k, v in schema.items() if k != "anyOf"}}
    return schema


def output_fields(schema: Mapping[str, Any], prefix: str = "", depth: int = 0) -> tuple[tuple[str, str], ...]:
    """Referencable (path, type) pairs of an output schema: top-level fields and one level below, where a
    list of objects is entered at its first item (`customers.0.customerId`: what a lookup returns)."""
    found: list[tuple[str, str]] = []
    for name, sub in (schema.get("properties") or {}).items():
        sub = _unwrap_nullable(sub)
        path = f"{prefix}{name}"
        kind = sub.get("type", "") if isinstance(sub, dict) else ""
        found.append((path, kind if isinstance(kind, str) else ""))
        if depth == 0 and isinstance(sub, dict) and kind == "object":
            found.extend(output_fields(sub, path + ".", depth + 1))
        items = sub.get("items") if isinstance(sub, dict) and kind == "array" else None
        if depth == 0 and isinstance(items, dict) and isinstance(items.get("properties"), dict):
            found.extend(output_fields(items, path + ".0.", depth + 1))
    return tuple(found)


def output_type(schema: Mapping[str, Any]) -> str:
    """The JSON type an output schema declares: its `type` (nullable unwrapped), "object" when it only
    lists properties, "" when it says nothing definite (a union of types, no schema)."""
    schema = _unwrap_nullable(schema)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if isinstance(kind, str):
        return kind
    return "object" if isinstance(schema.get("properties"), dict) else ""


def _catalog_hash(tools: Sequence[ToolDef]) -> str:
    canonical = json.dumps(
        [[t.name, t.description, t.parameters, list(t.output_fields), t.output_type] for t in tools],
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]

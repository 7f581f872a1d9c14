"""The tool catalog the planner plans over, built from the OpenAI `tools` format and checked at the door.

`[{"type": "function", "function": {"name", "description", "parameters", "output_schema"?}}]`.
`output_schema` is a planstack extension (a JSON Schema of the tool's output): when present, the
grammar can offer references to the output's fields as an enum instead of free `$nK.path` strings.

A catalog is client input, so every check that can grow is preceded by a cheaper bound on what it
walks: the number of tools; the JSON values of each definition (`MAX_TOOL_VALUES`, counted with an
early exit before anything else looks at it); `$ref` expansion bounded in depth, in number of
expansions and in the values it produces, *while* it expands (four self-references under `anyOf`
used to grow ×4 per level); depth, sub-schemas, enum sizes and arguments; then the patterns, charged
to one `PatternBudget` for the whole catalog; and only then the JSON-Schema meta-validation, the
expensive part (about 12 ms per 6 KB tool). A refusal names the first `SHOWN_PROBLEMS` problems.
`CatalogCache` keeps verdicts by content hash, so the same catalog is checked once.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from contract.errors import PlanstackBaseError
from planner.safe_regex import FORMAT_CHECKER, PatternBudget, pattern_problems

TOOL_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]{0,63}$")
ARG_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_TOOLS = 128
MAX_ARGS = 32
MAX_SCHEMA_DEPTH = 6
MAX_SCHEMA_NODES = 400
MAX_ENUM = 200
MAX_DESCRIPTION = 1000
MAX_TOOL_VALUES = 5_000  # JSON values in one tool definition, $defs included, before anything expands them
MAX_JSON_DEPTH = 48  # nesting of one tool definition as sent (schema levels are bounded again after expansion)
MAX_REF_EXPANSIONS = 64  # `$ref`s one schema may expand, in all (depth is bounded by MAX_SCHEMA_DEPTH)
MAX_PROBLEMS = 20  # problems collected before the check stops
SHOWN_PROBLEMS = 5  # problems named in the error's message
FUNCTION_KEYS = {"name", "description", "parameters", "output_schema", "strict"}


class CatalogError(PlanstackBaseError):
    """Bad tool definitions (a client's `tools`: 400); `problems` lists each one with where it is (at most
    MAX_PROBLEMS), the message names the first few."""

    status = 400
    type = "invalid_request_error"
    param = "tools"

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = [problem[:500] for problem in problems[:MAX_PROBLEMS]]
        shown = "; ".join(self.problems[:SHOWN_PROBLEMS])
        more = len(problems) - SHOWN_PROBLEMS
        super().__init__("invalid tool catalog: " + shown + (f" (and {more} more)" if more > 0 else ""))

    def __reduce__(self) -> tuple[Any, ...]:  # crosses process boundaries (serving/door)
        return (CatalogError, (self.problems,))


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
        budget = PatternBudget()  # one for the whole catalog: patterns per request and their compile cost
        for index, entry in enumerate(tools):
            if len(problems) >= MAX_PROBLEMS:
                break
            where = f"tools[{index}]"
            tool = _parse_tool(entry, where, problems, budget)
            if tool is None:
                continue
            if tool.name in seen:
                problems.append(f"{where}.function.name: duplicate tool name {tool.name!r}")
            seen.add(tool.name)
            defs.append(tool)
        if problems:
            raise CatalogError(problems)
        return cls.from_defs(defs)


def _parse_tool(entry: Any, where: str, problems: list[str], budget: PatternBudget) -> ToolDef | None:
    if not isinstance(entry, dict) or entry.get("type") != "function" or not isinstance(entry.get("function"), dict):
        problems.append(f"{where}: expected {{'type': 'function', 'function': {{...}}}}")
        return None
    function: dict[str, Any] = entry["function"]
    unknown = sorted(str(key)[:64] for key in set(function) - FUNCTION_KEYS)[:10]
    if unknown:
        problems.append(f"{where}.function: unknown keys {unknown}")
    values, depth = measure_json(function, MAX_TOOL_VALUES, MAX_JSON_DEPTH)
    if values > MAX_TOOL_VALUES or depth > MAX_JSON_DEPTH:
        problems.append(
            f"{where}.function: more than {MAX_TOOL_VALUES} JSON values or {MAX_JSON_DEPTH} levels of nesting "
            "in one tool definition"
        )
        return None
    name = function.get("name")
    if not isinstance(name, str) or not TOOL_NAME_RE.match(name):
        problems.append(f"{where}.function.name: {name!r} must match {TOOL_NAME_RE.pattern}")
        return None
    description = function.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        problems.append(f"{where}.function.description: a string of at most {MAX_DESCRIPTION} characters")
        description = ""
    before = len(problems)
    parameters = inline_refs(function.get("parameters") or {"type": "object", "properties": {}}, where, problems)
    if len(problems) == before:
        _check_parameters(parameters, f"{where}.function.parameters", problems, budget)
    output = function.get("output_schema")
    if output is not None and len(problems) == before:
        output = inline_refs(output, f"{where}.function.output_schema", problems)
        if len(problems) == before:
            _check_schema(output, f"{where}.function.output_schema", problems, budget)
    if len(problems) > before:
        return None
    params = dict(parameters)
    params.setdefault("properties", {})
    params.setdefault("type", "object")
    if not isinstance(output, dict):
        return ToolDef(name, description.strip(), params)
    return ToolDef(name, description.strip(), params, output_fields(output), output_type(output))


def _check_parameters(parameters: Any, where: str, problems: list[str], budget: PatternBudget) -> None:
    if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
        problems.append(f"{where}: must be a JSON Schema of type object")
        return
    props = parameters.get("properties", {})
    if not isinstance(props, dict):
        problems.append(f"{where}.properties: must be an object")
        return
    if len(props) > MAX_ARGS:  # before any pattern is compiled
        problems.append(f"{where}.properties: at most {MAX_ARGS} arguments, got {len(props)}")
        return
    for arg in props:
        if not ARG_NAME_RE.match(arg):
            problems.append(f"{where}.properties: argument name {str(arg)[:80]!r} must match {ARG_NAME_RE.pattern}")
    required = parameters.get("required", [])
    missing = [name for name in required if name not in props] if isinstance(required, list) else []
    if missing:
        problems.append(f"{where}.required: {missing[:10]} are not in properties")
    _check_schema(parameters, where, problems, budget)


def _check_schema(schema: Any, where: str, problems: list[str], budget: PatternBudget) -> bool:
    """The bounds first (depth, sub-schemas, enums: a walk of what is there), then the patterns
    within the catalog's budget, then the meta-validation, whose cost the bounds have capped."""
    depth, nodes, bad = _measure(schema, 0)
    before = len(problems)
    if depth > MAX_SCHEMA_DEPTH:
        problems.append(f"{where}: nested {depth} levels deep, at most {MAX_SCHEMA_DEPTH}")
    if nodes > MAX_SCHEMA_NODES:
        problems.append(f"{where}: {nodes} schema nodes, at most {MAX_SCHEMA_NODES}")
    problems.extend(f"{where}: {message}" for message in bad[:5])
    if len(problems) > before or budget.spent:  # a spent budget was reported where it ran out
        return False
    unsafe = pattern_problems(schema, where, budget)  # matched with RE2 only: refuse what it cannot take
    if unsafe:
        problems.extend(unsafe[:5])
        return False
    try:
        Draft202012Validator.check_schema(schema, format_checker=FORMAT_CHECKER)
    except SchemaError as exc:
        problems.append(f"{where}: not a valid JSON Schema ({exc.message[:300]})")
        return False
    return True


def measure_json(value: Any, max_values: int, max_depth: int) -> tuple[int, int]:
    """(JSON values, deepest nesting) of `value` (object keys not counted), iteratively and only up to
    just past either bound: the walk stops there, so it costs little whatever the client sent, and
    the recursive walks after it (expansion, measuring, meta-validation) cannot overflow the stack."""
    count, deepest = 0, 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack and count <= max_values and deepest <= max_depth:
        node, depth = stack.pop()
        count += 1
        deepest = max(deepest, depth)
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    return count, deepest


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
    for key in ("enum", "examples"):
        if isinstance(schema.get(key), list) and len(schema[key]) > MAX_ENUM:
            bad.append(f"{key} with {len(schema[key])} values, at most {MAX_ENUM}")
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


class _ExpansionSpent(PlanstackBaseError):
    """The `$ref` expansion went over its budget: stop at once, whatever is left to expand (internal:
    the reason is already in `problems`)."""

    def __init__(self) -> None:
        super().__init__("the $ref expansion budget is spent")


def inline_refs(schema: Any, where: str, problems: list[str]) -> Any:
    """The schema with local `#/$defs/<name>` references replaced by their definitions. Bounded while
    it expands, not after: nesting depth (MAX_SCHEMA_DEPTH), expansions in all (MAX_REF_EXPANSIONS)
    and values produced (MAX_TOOL_VALUES): four self-references under `anyOf` no longer multiply."""
    if not isinstance(schema, dict):
        return schema
    defs = schema.get("$defs") or schema.get("definitions") or {}
    if not isinstance(defs, dict):
        defs = {}
    spent = {"expansions": 0, "values": 0}

    def walk(node: Any, depth: int, level: int) -> Any:
        spent["values"] += 1
        if spent["values"] > MAX_TOOL_VALUES or level > MAX_JSON_DEPTH:
            problems.append(
                f"{where}: its $refs expand to more than {MAX_TOOL_VALUES} JSON values or {MAX_JSON_DEPTH} levels"
            )
            raise _ExpansionSpent
        if isinstance(node, list):
            return [walk(item, depth, level + 1) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if not ref.startswith(("#/$defs/", "#/definitions/")) or name not in defs:
                problems.append(f"{where}: unresolvable $ref {ref[:100]!r} (only local #/$defs are inlined)")
                raise _ExpansionSpent
            if depth > MAX_SCHEMA_DEPTH:
                problems.append(f"{where}: $ref {ref[:100]!r} nests too deep (recursive?)")
                raise _ExpansionSpent
            spent["expansions"] += 1
            if spent["expansions"] > MAX_REF_EXPANSIONS:
                problems.append(f"{where}: more than {MAX_REF_EXPANSIONS} $ref expansions")
                raise _ExpansionSpent
            target = defs[name] if isinstance(defs[name], dict) else {}
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**target, **rest}, depth + 1, level)
        return {k: walk(v, depth, level + 1) for k, v in node.items() if k not in ("$defs", "definitions")}

    try:
        return walk(schema, 0, 1)
    except _ExpansionSpent:
        return {}


def _unwrap_nullable(schema: Any) -> Any:
    if isinstance(schema, dict) and isinstance(schema.get("anyOf"), list):
        options = [o for o in schema["anyOf"] if not (isinstance(o, dict) and o.get("type") == "null")]
        if len(options) == 1 and isinstance(options[0], dict):
            return {**options[0], **{k: v for k, v in schema.items() if k != "anyOf"}}
    return schema


def output_fields(schema: Mapping[str, Any], prefix: str = "", depth: int = 0) -> tuple[tuple[str, str], ...]:
    """Referencable (path, type) pairs of an output schema: top-level fields and one level below, where a
    list of objects is entered at its first item (`customers.0.customerId`: what a lookup returns). An
    identifier written as an object of identifiers one level below is entered too: YouTube's search result
    `items.0.id` holds `videoId`, `channelId`, `playlistId` (`items.0.id.videoId`)."""
    found: list[tuple[str, str]] = []
    for name, sub in (schema.get("properties") or {}).items():
        sub = _unwrap_nullable(sub)
        path = f"{prefix}{name}"
        kind = sub.get("type", "") if isinstance(sub, dict) else ""
        found.append((path, kind if isinstance(kind, str) else ""))
        if depth == 1 and isinstance(sub, dict) and kind == "object" and _names_an_identifier(name):
            found.extend(
                (f"{path}.{inner}", k if isinstance(k, str) else "")
                for inner, leaf in (sub.get("properties") or {}).items()
                if _names_an_identifier(inner)
                and (k := (_unwrap_nullable(leaf).get("type", "") if isinstance(leaf, dict) else "")) != "object"
            )
        if depth == 0 and isinstance(sub, dict) and kind == "object":
            found.extend(output_fields(sub, path + ".", depth + 1))
        items = sub.get("items") if isinstance(sub, dict) and kind == "array" else None
        if depth == 0 and isinstance(items, dict) and isinstance(items.get("properties"), dict):
            found.extend(output_fields(items, path + ".0.", depth + 1))
    return tuple(found)


_IDENTIFIER_TAILS = frozenset({"id", "ids", "gid", "sid", "key", "uuid"})


def _names_an_identifier(name: str) -> bool:
    """`id`, `resourceId`, `video_id`, `ConversationSid`: a field name whose last word says it identifies."""
    words = re.split(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])", name)
    return bool(words) and words[-1].lower() in _IDENTIFIER_TAILS


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


class CatalogCache:
    """Verdicts on client catalogs — the ToolCatalog, or the CatalogError — by content digest, scoped
    (the tenant: another tenant's catalog must not come back faster), LRU-bounded in entries and in
    the bytes of the definitions they hold, in all and per scope (one tenant's many catalogs evict its
    own older ones, not every other tenant's). A verdict depends only on the definitions, never on load."""

    def __init__(
        self, *, max_entries: int = 256, max_bytes: int = 64 << 20, max_scope_bytes: int | None = None
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_scope_bytes = max_bytes if max_scope_bytes is None else min(max_scope_bytes, max_bytes)
        self._entries: OrderedDict[tuple[str, str], tuple[ToolCatalog | CatalogError, int]] = OrderedDict()
        self._bytes = 0
        self._scope_bytes: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def bytes_of(self, scope: str) -> int:
        """The definition bytes the verdicts of `scope` hold."""
        return self._scope_bytes.get(scope, 0)

    def get(self, scope: str, digest: str) -> ToolCatalog | CatalogError | None:
        entry = self._entries.get((scope, digest))
        if entry is None:
            return None
        self._entries.move_to_end((scope, digest))
        return entry[0]

    def put(self, scope: str, digest: str, verdict: ToolCatalog | CatalogError, size: int) -> None:
        if size > self.max_scope_bytes or self.max_entries <= 0:
            return
        self._drop((scope, digest))
        self._entries[(scope, digest)] = (verdict, size)
        self._bytes += size
        self._scope_bytes[scope] = self.bytes_of(scope) + size
        if self.bytes_of(scope) > self.max_scope_bytes:  # the scope's own oldest first
            for key in [key for key in self._entries if key[0] == scope]:
                if self.bytes_of(scope) <= self.max_scope_bytes:
                    break
                self._drop(key)
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: tuple[str, str]) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self._bytes -= entry[1]
        left = self._scope_bytes[key[0]] - entry[1]
        if left:
            self._scope_bytes[key[0]] = left
        else:
            del self._scope_bytes[key[0]]


def packed_tools(tools: Any) -> tuple[bytes, str]:
    """`tools` as pickled bytes (what a worker process receives) and their digest (the cache key).
    Pickling is about 8x faster than `json.dumps` (2.4 vs 21 ms for 740 KB of definitions), and equal
    bytes mean equal definitions, so the digest never mixes two catalogs up."""
    packed = pickle.dumps(tools, protocol=5)
    return packed, hashlib.blake2b(packed, digest_size=20).hexdigest()


def _catalog_hash(tools: Sequence[ToolDef]) -> str:
    canonical = json.dumps(
        [[t.name, t.description, t.parameters, list(t.output_fields), t.output_type] for t in tools],
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]

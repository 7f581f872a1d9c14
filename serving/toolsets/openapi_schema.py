"""OpenAPI schema objects → the JSON Schema (2020-12) the planner's catalog accepts, with bounded expansion.

- `$ref`s are local JSON pointers (the loader refused any other), inlined as they are met. A `$ref`
  already being expanded on the current path (a recursive structure: a comment's replies are comments)
  is cut to `{}`, a schema that accepts anything: the structure stays usable, its recursion is not
  described. Every expansion counts against `ImportLimits.max_ref_expansions`, every schema object
  written against `max_schema_nodes`, and a chain deeper than `max_ref_depth` is refused.
- `allOf` of object schemas is merged into one object (properties and required lists united).
- Nullable values look the same whichever version wrote them: 3.0's `nullable: true` and 3.1's
  `type: [T, "null"]` both become `{"anyOf": [<T>, {"type": "null"}]}` (the form the planner's catalog
  and grammar unwrap), with the description outside.
- 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` become the 2020-12 numeric ones; `example`
  becomes `examples`; `readOnly` properties are dropped from inputs and `writeOnly` ones from outputs;
  `xml`, `discriminator`, `externalDocs` and `x-` extensions are dropped.
- A `pattern` RE2 cannot run (lookarounds, backreferences) is dropped and quoted in the description;
  an `enum` longer than the catalog accepts is dropped and summarised in the description.
- Depth: below `depth` levels of `properties`/`items` a schema keeps its type only. The planner reads
  output fields two levels down and writes arguments a few levels deep; the rest is documentation.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from planner.catalog import MAX_ENUM
from planner.safe_regex import UnsafePattern, compile_pattern
from serving.toolsets.openapi_load import ImportLimits, OpenApiInvalidError

Schema = dict[str, Any]
DESCRIPTION_CHARS = 300
OUTPUT_DESCRIPTION_CHARS = 160
EXAMPLE_CHARS = 80
_COPIED = (
    "format",
    "const",
    "default",
    "minimum",
    "maximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
)
_NUMBERS = ("minimum", "maximum", "multipleOf", "exclusiveMinimum", "exclusiveMaximum")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def as_object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (documents are untrusted)."""
    return value if isinstance(value, dict) else {}


def clip(text: Any, limit: int) -> str:
    """Whitespace collapsed, at most `limit` characters."""
    flat = " ".join(str(text).split()) if text else ""
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class SchemaConverter:
    """Converts the schemas of one document; counts expansions and nodes over the whole import."""

    def __init__(self, document: dict[str, Any], version: str, limits: ImportLimits) -> None:
        self.document = document
        self.version = version
        self.limits = limits
        self.expansions = 0
        self.nodes = 0

    # -- references ------------------------------------------------------------------------
    def lookup(self, ref: str) -> Any:
        """The value a local `#/a/b~1c` pointer names; raises OpenApiInvalidError."""
        node: Any = self.document
        for raw in ref[1:].split("/")[1:] if ref.startswith("#/") else ([] if ref == "#" else [None]):
            if raw is None:
                raise OpenApiInvalidError([f"$ref {ref!r} is not a JSON pointer into this document"])
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise OpenApiInvalidError([f"$ref {ref!r} points to nothing"])
        return node

    def deref(self, node: Any, trail: tuple[str, ...]) -> tuple[Any, tuple[str, ...], bool]:
        """(the value behind a chain of `$ref`s, the trail including them, whether it recursed)."""
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in trail:
                return {}, trail, True
            if len(trail) >= self.limits.max_ref_depth:
                raise OpenApiInvalidError([f"$ref chain deeper than {self.limits.max_ref_depth} at {ref!r}"])
            self.expansions += 1
            if self.expansions > self.limits.max_ref_expansions:
                raise OpenApiInvalidError([f"more than {self.limits.max_ref_expansions} $ref expansions"])
            target = self.lookup(ref)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings} if isinstance(target, dict) and siblings else target
            trail = (*trail, ref)
        return node, trail, False

    # -- schemas ---------------------------------------------------------------------------
    def convert(self, schema: Any, *, output: bool, depth: int, trail: tuple[str, ...] = ()) -> Schema:
        """`schema` as catalog JSON Schema; `output` drops writeOnly (else readOnly) properties."""
        raw, trail, recursed = self.deref(schema, trail)
        if recursed:
            return {}
        if raw is True or raw is None:
            return {}
        if raw is False:
            return {"not": {}}
        if not isinstance(raw, dict):
            raise OpenApiInvalidError([f"a schema must be an object, got {type(raw).__name__}"])
        if isinstance(raw.get("allOf"), list):
            raw, trail = self._merge_all_of(raw, trail)
        self.nodes += 1
        if self.nodes > self.limits.max_schema_nodes:
            raise OpenApiInvalidError([f"more than {self.limits.max_schema_nodes} schema objects after expansion"])
        kinds, nullable = _kinds(raw, self.version)
        core: Schema = {}
        if kinds:
            core["type"] = kinds[0] if len(kinds) == 1 else kinds
        notes: list[str] = []
        self._copy_constraints(raw, core, notes)

        def sub(value: Any) -> Schema:
            return self.convert(value, output=output, depth=depth - 1, trail=trail)

        if depth > 0:
            hidden = "writeOnly" if output else "readOnly"
            props = raw.get("properties")
            if isinstance(props, dict):
                kept = {}
                for name, value in props.items():
                    resolved, _, _ = self.deref(value, trail)
                    if isinstance(resolved, dict) and resolved.get(hidden) is True:
                        continue
                    kept[name] = sub(value)
                core["properties"] = kept
                required = [r for r in raw.get("required", []) if isinstance(r, str) and r in kept]
                if required:
                    core["required"] = required
            if "items" in raw and isinstance(raw["items"], (dict, bool)):
                core["items"] = sub(raw["items"])
            extra = raw.get("additionalProperties")
            if isinstance(extra, bool):
                core["additionalProperties"] = extra
            elif isinstance(extra, dict):
                core["additionalProperties"] = sub(extra)
            for key in ("anyOf", "oneOf"):
                options = raw.get(key)
                if isinstance(options, list) and options:
                    converted = [sub(option) for option in options]
                    nulls = [o for o in converted if o == {"type": "null"}]
                    rest = [o for o in converted if o != {"type": "null"}]
                    nullable = nullable or bool(nulls)
                    if len(rest) == 1 and not (set(rest[0]) & set(core)):
                        core.update(rest[0])
                    elif rest:
                        core[key] = rest
        elif "type" not in core and isinstance(raw.get("properties"), dict):
            core["type"] = "object"
        description = clip(raw.get("description"), OUTPUT_DESCRIPTION_CHARS if output else DESCRIPTION_CHARS)
        if raw.get("deprecated") is True:
            notes.insert(0, "Deprecated.")
        text = " ".join(part for part in (description, *notes) if part)
        outer: Schema = {}
        if text:
            outer["description"] = text
        for key in ("default", "examples"):
            if key in core:
                outer[key] = core.pop(key)
        if nullable and core.get("type") != "null":
            if "enum" in core:
                core["enum"] = [v for v in core["enum"] if v is not None]
            return {"anyOf": [core, {"type": "null"}], **outer}
        return {**core, **outer}

    def _merge_all_of(self, raw: Schema, trail: tuple[str, ...]) -> tuple[Schema, tuple[str, ...]]:
        """One schema from `allOf` parts: properties and required united, other keywords first wins."""
        merged: Schema = {k: v for k, v in raw.items() if k != "allOf"}
        props: dict[str, Any] = dict(merged.get("properties") or {})
        required: list[str] = list(merged.get("required") or [])
        for part in raw["allOf"]:
            resolved, _, recursed = self.deref(part, trail)
            if recursed or not isinstance(resolved, dict):
                continue
            if isinstance(resolved.get("allOf"), list):
                resolved, _ = self._merge_all_of(resolved, trail)
            for name, value in (resolved.get("properties") or {}).items():
                props.setdefault(name, value)
            required += [r for r in resolved.get("required") or [] if r not in required]
            for key, value in resolved.items():
                if key not in ("properties", "required"):
                    merged.setdefault(key, value)
        if props:
            merged["properties"] = props
            merged.setdefault("type", "object")
        if required:
            merged["required"] = required
        return merged, trail

    def _copy_constraints(self, raw: Schema, core: Schema, notes: list[str]) -> None:
        for key in _COPIED:
            if key in raw and _fits(key, raw[key]):
                core[key] = raw[key]
        for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            value = raw.get(key)
            if value is True and isinstance(raw.get(bound), (int, float)):  # 3.0 style
                core[key] = core.pop(bound)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                core[key] = value
        enum = raw.get("enum")
        if isinstance(enum, list) and enum:
            if len(enum) <= MAX_ENUM:
                core["enum"] = enum
            else:
                shown = ", ".join(str(v) for v in enum[:12])
                notes.append(f"One of {len(enum)} values, e.g. {shown}.")
        pattern = raw.get("pattern")
        if isinstance(pattern, str):
            try:
                compile_pattern(pattern)
                core["pattern"] = pattern
            except UnsafePattern:
                notes.append(f"Pattern: {clip(pattern, 120)}.")
        examples = raw.get("examples") if isinstance(raw.get("examples"), list) else None
        if examples is None and "example" in raw:
            examples = [raw["example"]]
        shown_examples = [e for e in examples or [] if _scalar_example(e)][:3]
        if shown_examples:
            core["examples"] = shown_examples


def _kinds(raw: Schema, version: str) -> tuple[list[str], bool]:
    """(declared non-null types, whether null is allowed) in either version's style."""
    kind = raw.get("type")
    listed = kind if isinstance(kind, list) else [kind]
    kinds = [k for k in listed if isinstance(k, str)]
    nullable = "null" in kinds or (version == "3.0" and raw.get("nullable") is True)
    return [k for k in kinds if k != "null"], nullable


def _fits(key: str, value: Any) -> bool:
    if key in _NUMBERS:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if key in _COUNTS:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if key == "uniqueItems":
        return isinstance(value, bool)
    if key == "format":
        return isinstance(value, str)
    return True


def _scalar_example(value: Any) -> bool:
    if isinstance(value, str):
        return 0 < len(value) <= EXAMPLE_CHARS
    return isinstance(value, (int, float, bool))


def _enum_text(values: Any) -> str | None:
    if not isinstance(values, list) or not values:
        return None
    return ", ".join(map(str, values[:20])) + (", …" if len(values) > 20 else "")


def describe_argument(schema: Schema) -> str:
    """What the document declares about an argument, as the sentence the planner reads: its
    description, then format, allowed values, bounds, default and example."""
    core = schema
    options = schema.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        core = next(o for o in options if o != {"type": "null"})
    items = as_object(core.get("items"))
    facts = {
        "Format": core.get("format") or items.get("format"),
        "One of": _enum_text(core.get("enum")),
        "Items one of": _enum_text(items.get("enum")),
        "Minimum": core.get("minimum", core.get("exclusiveMinimum")),
        "Maximum": core.get("maximum", core.get("exclusiveMaximum")),
        "Max length": core.get("maxLength"),
    }
    parts = [str(schema.get("description") or "")]
    parts += [
        f"{label}: {value}." for label, value in facts.items() if value is not None and f"{label}:" not in parts[0]
    ]
    if "default" in schema:
        parts.append(f"Default: {clip(schema['default'], EXAMPLE_CHARS)}.")
    if schema.get("examples") and "Example:" not in parts[0]:
        parts.append(f"Example: {clip(schema['examples'][0], EXAMPLE_CHARS)}.")
    return clip(" ".join(p for p in parts if p), DESCRIPTION_CHARS + 200)

"""Import an OpenAPI 3.0/3.1 document: every operation with an `operationId` becomes a tool and its binding.

`import_openapi(text)` → `OpenApiImport` whose `tools` are `ImportedTool(tool, binding)`: `tool` is
an OpenAI-format function (`name`, `description`, `parameters`, and the planstack extension
`output_schema` that makes output fields referencable in plans; planner/catalog.py), `binding` the
`executors.sources.http_binding.HttpBinding` the HTTP caller builds the request from. CPU-bound and
synchronous: callers on an event loop run it in a worker thread (measured on this 2-core machine: the
0.9 MB Adyen Checkout document, 28 operations, imports in about 3 s, most of it the spec validator and
the planner's own schema checks; a 0.7 MB, 118-operation Intercom document in about 4 s).

Conventions (the HTTP caller and the benchmark data rely on them):
- path, query and header parameters become arguments under their own names; a name that is not a
  valid argument name (`Intercom-Version`, `filter[status]`) is written with `_` for each other
  character, and the binding keeps the name on the wire. Skipped: cookie parameters, the
  `Authorization` header, parameters that an `apiKey` security scheme declares, and header or query
  parameters named and described as a credential (Slack's `token` header, "Authentication token",
  declared by no scheme; Google's `key` and `access_token` query parameters; each one named in
  `skipped`): credentials come from the toolset, never from a plan. Operation-level parameters override
  path-level ones.
- a JSON request body (`application/json` or `*+json`) whose schema is an object with properties has
  each property as an argument (location `body`; `readOnly` properties skipped); a property named
  like a parameter becomes `body_<name>`. Any other JSON body is one argument `body` (`body: whole`).
  Where the document declares only an `application/x-www-form-urlencoded` body (Twilio, Stripe), its
  named fields are arguments the same way and the binding sends them as form fields
  (`encoding: form`). An operation whose only body is neither is imported without a body when the
  body is optional, and skipped (listed in `skipped`) when it is required. A body whose properties would take the tool
  past `ImportLimits.max_arguments` (the planner's catalog limit) stays whole, one argument `body`.
- an operation with more arguments than that bound (Spotify's and YouTube's searches have 40 and more
  query parameters) keeps every required argument and then the optional ones in declared order,
  deprecated ones last, up to the bound; the ones left out are named in `skipped`. Only an operation
  with more *required* arguments than the bound is not imported.
- required arguments: the required parameters (path parameters always), plus the body's required
  properties when the request body is required.
- the tool name is the operationId with every character outside `[A-Za-z0-9_-]` replaced by `_`,
  cut to 64 characters (camelCase kept as written; `op_` in front when it does not start with a
  letter; `_2`, `_3`… on a clash); the description is the summary and the description, bounded.
- each argument's description keeps what the document declares: its description, `format` (date,
  date-time…), allowed values, default, example and bounds (openapi_schema.describe_argument).
- the output schema is the schema of the first 2xx response with JSON content.

Bounds (`ImportLimits`): bytes, operations, `$ref` expansions and depth, schema
objects after expansion; past one the whole document is refused with `OpenApiInvalidError` (400,
`openapi_invalid`) naming the first problems. Each tool is then checked by the planner's own catalog
validation; where its output or argument schemas are too deep or too large for it, the deepest
levels are cut to their types until it fits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from contract.errors import PlanstackBaseError
from executors.sources.http_binding import ArgumentBinding, HttpBinding
from planner.catalog import (
    ARG_NAME_RE,
    MAX_DESCRIPTION,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_NODES,
    CatalogError,
    ToolCatalog,
)
from serving.toolsets.openapi_load import ImportLimits, OpenApiInvalidError, parse_document, validate_document
from serving.toolsets.openapi_schema import Schema, SchemaConverter, as_object, clip, describe_argument

BodyMode = Literal["none", "properties", "whole"]
Encoding = Literal["json", "form"]
METHODS = ("get", "put", "post", "patch", "delete", "head")
TOOL_DESCRIPTION_CHARS = 600
ARGUMENT_DEPTHS = (4, 3, 2, 1, 0)  # levels of structure kept in argument schemas, deepest first
OUTPUT_DEPTHS = (4, 3, 2, 1)  # four: a listed result's id object (`items[].id.videoId`, what a lookup hands on)
MAX_NAMES_SHOWN = 8  # left-out argument names listed per operation
_NOT_TOOL_CHAR = re.compile(r"[^A-Za-z0-9_-]")
_NOT_ARG_CHAR = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True)
class ImportedTool:
    tool: dict[str, Any]
    binding: HttpBinding

    @property
    def name(self) -> str:
        return str(self.tool["function"]["name"])


@dataclass(frozen=True)
class OpenApiImport:
    title: str
    version: str  # the document's `openapi` version, "3.0" or "3.1"
    servers: tuple[str, ...]
    tools: tuple[ImportedTool, ...]
    # what was left out, each with its reason: operations not imported, and optional arguments past the
    # bound of an operation that was
    skipped: tuple[str, ...] = field(default=())

    def openai_tools(self) -> list[dict[str, Any]]:
        return [t.tool for t in self.tools]


def import_openapi(text: str | bytes, limits: ImportLimits | None = None) -> OpenApiImport:
    """Parse, validate and convert a document; raises OpenApiInvalidError."""
    limits = limits or ImportLimits()
    document = parse_document(text, limits)
    counted = _inline_operation_ids(document)  # before the spec validator, whose cost grows with the document
    if counted > limits.max_operations:
        raise OpenApiInvalidError([f"{counted} operations, at most {limits.max_operations}"])
    version = validate_document(document, limits)
    return _Importer(document, version, limits).run()


def _inline_operation_ids(document: dict[str, Any]) -> int:
    """Operations with an operationId written in `paths` itself (a path item behind a `$ref` is counted
    after validation): a cheap lower bound of what the import would turn into tools."""
    count = 0
    for item in as_object(document.get("paths")).values():
        if isinstance(item, dict):
            count += sum(isinstance(as_object(item.get(m)).get("operationId"), str) for m in METHODS)
    return count


@dataclass
class _Argument:
    name: str
    schema: Schema
    required: bool
    binding: ArgumentBinding


class _Importer:
    def __init__(self, document: dict[str, Any], version: str, limits: ImportLimits) -> None:
        self.document = document
        self.version = version
        self.limits = limits
        self.schemas = SchemaConverter(document, version, limits)
        self.credentials = _credential_parameters(document)
        self.described_credentials: set[tuple[str, str]] = set()  # credentials no security scheme declares
        self.names: set[str] = set()
        self.partial: list[str] = []  # operations imported without some optional arguments, and which

    def run(self) -> OpenApiImport:
        operations = list(self._operations())
        with_id = [op for op in operations if isinstance(op[2].get("operationId"), str)]
        if len(with_id) > self.limits.max_operations:
            raise OpenApiInvalidError([f"{len(with_id)} operations, at most {self.limits.max_operations}"])
        skipped = [
            f"{method.upper()} {path}: no operationId"
            for path, method, op, _ in operations
            if not isinstance(op.get("operationId"), str)
        ]
        tools: list[ImportedTool] = []
        for path, method, operation, shared in with_id:
            try:
                tools.append(self._tool(path, method, operation, shared))
            except _Skip as why:
                skipped.append(f"{method.upper()} {path} ({operation['operationId']}): {why}")
        skipped.extend(self.partial)
        skipped.extend(
            f"{location} parameter {wire}: a credential (named and described as one), sent by the toolset's auth"
            for location, wire in sorted(self.described_credentials)
        )
        info = as_object(self.document.get("info"))
        servers = tuple(
            str(s["url"])
            for s in self.document.get("servers") or []
            if isinstance(s, dict) and isinstance(s.get("url"), str)
        )
        return OpenApiImport(clip(info.get("title"), 200), self.version, servers, tuple(tools), tuple(skipped))

    def _operations(self) -> Iterator[tuple[str, str, dict[str, Any], list[Any]]]:
        for path, entry in as_object(self.document.get("paths")).items():
            item = as_object(self.schemas.deref(entry, ())[0])
            shared = item["parameters"] if isinstance(item.get("parameters"), list) else []
            for method in METHODS:
                if isinstance(item.get(method), dict):
                    yield str(path), method, item[method], shared

    # -- one operation ---------------------------------------------------------------------
    def _tool(self, path: str, method: str, operation: dict[str, Any], shared: list[Any]) -> ImportedTool:
        operation_id = str(operation["operationId"])
        name = self._tool_name(operation_id)
        for arg_depth, out_depth in zip(ARGUMENT_DEPTHS, (*OUTPUT_DEPTHS, 0), strict=True):
            declared, (body_mode, encoding) = self._arguments(operation, shared, arg_depth)
            arguments = self._within_bound(declared)
            output = self._output(operation, out_depth)
            tool = self._openai_tool(name, operation, arguments, output)
            if arg_depth and not _fits_catalog(tool):
                continue  # cheap pre-check; the catalog's own validation below decides
            problems = _catalog_problems(tool)
            if not problems:
                break
        else:
            raise OpenApiInvalidError([f"{operation_id}: {p}" for p in problems])
        kept = {a.name for a in arguments}
        left_out = [a.name for a in declared if a.name not in kept]
        if left_out:
            self.partial.append(
                f"{method.upper()} {path} ({operation_id}): {len(left_out)} optional arguments past the bound of "
                f"{self.limits.max_arguments} left out: {', '.join(left_out[:MAX_NAMES_SHOWN])}"
                + (" …" if len(left_out) > MAX_NAMES_SHOWN else "")
            )
        binding = HttpBinding(
            method=method.upper(),  # type: ignore[arg-type]
            path=path,
            arguments=tuple(a.binding for a in arguments),
            body=body_mode,
            encoding=encoding,
            operation_id=operation_id[:256],
        )
        self.names.add(name)
        return ImportedTool(tool, binding)

    def _tool_name(self, operation_id: str) -> str:
        base = _NOT_TOOL_CHAR.sub("_", operation_id)
        if not base[:1].isalpha():
            base = "op_" + base
        base = base[:64]
        name, n = base, 2
        while name in self.names:
            suffix = f"_{n}"
            name, n = base[: 64 - len(suffix)] + suffix, n + 1
        return name

    def _openai_tool(
        self, name: str, operation: dict[str, Any], arguments: list[_Argument], output: Schema | None
    ) -> dict[str, Any]:
        summary = clip(operation.get("summary"), TOOL_DESCRIPTION_CHARS)
        details = clip(operation.get("description"), TOOL_DESCRIPTION_CHARS)
        if summary and details and not details.startswith(summary.rstrip(".")):
            text = f"{summary.rstrip('.')}. {details}"
        else:
            text = details or summary
        if operation.get("deprecated") is True:
            text = "Deprecated. " + text
        properties = {a.name: {**a.schema, "description": describe_argument(a.schema)} for a in arguments}
        for arg in properties.values():
            if not arg["description"]:
                del arg["description"]
        parameters: Schema = {"type": "object", "properties": properties}
        required = [a.name for a in arguments if a.required]
        if required:
            parameters["required"] = required
        function: dict[str, Any] = {
            "name": name,
            "description": clip(text, min(TOOL_DESCRIPTION_CHARS, MAX_DESCRIPTION)),
            "parameters": parameters,
        }
        if output is not None:
            function["output_schema"] = output
        return {"type": "function", "function": function}

    def _arguments(
        self, operation: dict[str, Any], shared: list[Any], depth: int
    ) -> tuple[list[_Argument], tuple[BodyMode, Encoding]]:
        declared: dict[tuple[str, str], dict[str, Any]] = {}
        for entry in [*shared, *(operation.get("parameters") or [])]:
            param, trail, _ = self.schemas.deref(entry, ())
            if isinstance(param, dict) and isinstance(param.get("name"), str) and isinstance(param.get("in"), str):
                declared[(param["in"], param["name"])] = {**param, "_trail": trail}
        arguments: list[_Argument] = []
        taken: set[str] = set()
        for (location, wire), param in declared.items():
            if location not in ("path", "query", "header"):
                continue
            credential = (location, wire.lower()) in self.credentials
            if credential or (location == "header" and wire.lower() == "authorization"):
                continue
            if location != "path" and _described_credential(wire, param):
                self.described_credentials.add((location, wire))  # the toolset's auth sends it, never a plan
                continue
            schema = self._parameter_schema(param, depth)
            arg = _argument_name(wire, taken)
            required = location == "path" or param.get("required") is True
            if param.get("deprecated") is True:
                schema["description"] = clip(f"Deprecated. {schema.get('description', '')}", 400)
            where = ArgumentBinding(argument=arg, location=location, name=wire)  # type: ignore[arg-type]
            arguments.append(_Argument(arg, schema, required, where))
        return arguments, self._body(operation, depth, arguments, taken)

    def _within_bound(self, arguments: list[_Argument]) -> list[_Argument]:
        """At most `max_arguments`: every required argument, then the optional ones in declared order,
        deprecated ones last. An operation with more required arguments than the bound is skipped."""
        bound = self.limits.max_arguments
        if len(arguments) <= bound:
            return arguments
        required = [a for a in arguments if a.required]
        if len(required) > bound:
            raise _Skip(f"{len(required)} required arguments, at most {bound}")
        optional = [a for a in arguments if not a.required]
        optional.sort(key=lambda a: a.schema.get("description", "").startswith("Deprecated."))  # stable
        kept = {a.name for a in [*required, *optional[: bound - len(required)]]}
        return [a for a in arguments if a.name in kept]

    def _parameter_schema(self, param: dict[str, Any], depth: int) -> Schema:
        raw = param.get("schema")
        if raw is None and isinstance(param.get("content"), dict):
            media = next(iter(param["content"].values()), None)
            raw = media.get("schema") if isinstance(media, dict) else None
        with_docs = dict(raw) if isinstance(raw, dict) else {}  # beside a $ref: SchemaConverter.deref merges
        if param.get("description"):
            with_docs["description"] = param["description"]
        if "example" in param and "example" not in with_docs:
            with_docs["example"] = param["example"]
        return self.schemas.convert(with_docs, output=False, depth=depth, trail=param["_trail"])

    def _body(
        self, operation: dict[str, Any], depth: int, arguments: list[_Argument], taken: set[str]
    ) -> tuple[BodyMode, Encoding]:
        body, trail, _ = self.schemas.deref(operation.get("requestBody"), ())
        if not isinstance(body, dict):
            return "none", "json"
        media = _json_media(body.get("content"))
        encoding: Encoding = "json"
        if media is None and (media := _form_media(body.get("content"))) is not None:
            encoding = "form"
        if media is None:
            if body.get("required") is True:
                raise _Skip("its required request body is neither JSON nor form fields")
            return "none", "json"
        body_required = body.get("required") is True
        raw, trail, _ = self.schemas.deref(media.get("schema"), trail)
        if isinstance(raw, dict) and isinstance(raw.get("allOf"), list):
            raw, trail = self.schemas._merge_all_of(raw, trail)
        schema = self.schemas.convert(raw if raw is not None else {}, output=False, depth=depth + 1, trail=trail)
        props = schema.get("properties")
        too_wide = isinstance(props, dict) and len(arguments) + len(props) > self.limits.max_arguments
        flat = isinstance(props, dict) and bool(props) and "anyOf" not in schema and "oneOf" not in schema
        if encoding == "form" and not flat:  # form fields are named: a body without named fields has no wire form
            if body_required:
                raise _Skip("its required form body has no named fields")
            return "none", "json"
        if not flat or too_wide:
            if body.get("description") and not schema.get("description"):
                schema["description"] = clip(body["description"], 300)
            arg = _argument_name("body", taken)
            whole = ArgumentBinding(argument=arg, location="body", name="")
            arguments.append(_Argument(arg, schema, body_required, whole))
            return "whole", encoding  # (a form body too wide for its fields: one object, sent as its fields)
        wanted = set(schema.get("required", [])) if body_required else set()
        for wire, sub in (props or {}).items():
            arg = _argument_name(wire, taken, prefix="body_")
            where = ArgumentBinding(argument=arg, location="body", name=wire)
            arguments.append(_Argument(arg, sub, wire in wanted, where))
        return "properties", encoding

    def _output(self, operation: dict[str, Any], depth: int) -> Schema | None:
        responses = as_object(operation.get("responses"))
        for code in sorted(str(c) for c in responses):
            if not (code.startswith("2") and len(code) == 3):
                continue
            response, trail, _ = self.schemas.deref(responses[code], ())
            media = _json_media(response.get("content")) if isinstance(response, dict) else None
            if media is not None and media.get("schema") is not None:
                return self.schemas.convert(media["schema"], output=True, depth=depth, trail=trail)
        return None


class _Skip(PlanstackBaseError):
    """This operation cannot become a tool; the document is still imported."""


def _json_media(content: Any) -> dict[str, Any] | None:
    if not isinstance(content, dict):
        return None
    for media_type, media in content.items():
        kind = media_type.split(";")[0].strip().lower()
        if (kind == "application/json" or kind.endswith("+json")) and isinstance(media, dict):
            return media
    return None


def _form_media(content: Any) -> dict[str, Any] | None:
    """`application/x-www-form-urlencoded`, the only body some documents declare (Twilio's, Stripe's)."""
    if not isinstance(content, dict):
        return None
    for media_type, media in content.items():
        if media_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded" and isinstance(media, dict):
            return media
    return None


def _argument_name(wire: str, taken: set[str], prefix: str = "") -> str:
    """A catalog-valid, unused argument name for a name on the wire (`prefix` first on a clash)."""
    base = _NOT_ARG_CHAR.sub("_", wire) or "arg"
    if not (base[0].isalpha() or base[0] == "_"):
        base = "_" + base
    base = base[:64]
    name = base if base not in taken else (prefix + base)[:64] if prefix else base
    n = 2
    while name in taken or not ARG_NAME_RE.match(name):
        suffix = f"_{n}"
        name, n = base[: 64 - len(suffix)] + suffix, n + 1
    taken.add(name)
    return name


# a header or query parameter named like a credential (`token`, `access_token`, `api_key`, `X-API-Key`,
# `key`) whose description says it is one ("Authentication token. Requires scope: `chat:write`", Slack's
# Web API, which declares no apiKey scheme for it; Google's "API key. Your API key identifies your
# project…"): the toolset's auth carries it, a plan never does
_CREDENTIAL_NAMES = frozenset({"token", "accesstoken", "authtoken", "oauthtoken", "apikey", "key", "xapikey"})
_CREDENTIAL_TEXT = re.compile(
    r"\b(?:authenticat\w*|authori[sz]ation|credentials?|api[ _-]?key"
    r"|(?:access|bearer|auth|oauth(?:\s*2(?:\.0)?)?) token)\b",
    re.I,
)


def _described_credential(wire: str, param: dict[str, Any]) -> bool:
    name = re.sub(r"[^a-z]", "", wire.lower())
    schema = param.get("schema")
    text = str(param.get("description") or (schema.get("description") if isinstance(schema, dict) else "") or "")
    return name in _CREDENTIAL_NAMES and _CREDENTIAL_TEXT.search(text[:400]) is not None


def _credential_parameters(document: dict[str, Any]) -> set[tuple[str, str]]:
    """(location, lowercased name) of every parameter an `apiKey` security scheme declares."""
    schemes = as_object(as_object(document.get("components")).get("securitySchemes"))
    found: set[tuple[str, str]] = set()
    for scheme in schemes.values():
        if isinstance(scheme, dict) and scheme.get("type") == "apiKey" and isinstance(scheme.get("name"), str):
            found.add((str(scheme.get("in")), scheme["name"].lower()))
    return found


def _shape(schema: Any, depth: int = 0) -> tuple[int, int]:
    """(depth, nodes) counted as the planner's catalog counts them (planner/catalog.py `_measure`)."""
    if isinstance(schema, list):
        shapes = [_shape(item, depth) for item in schema]
        return max((d for d, _ in shapes), default=depth), sum(n for _, n in shapes)
    if not isinstance(schema, dict):
        return depth, 1
    deepest, nodes = depth, 1
    for key, value in schema.items():
        if key in _UNCOUNTED:
            continue
        if key == "properties" and isinstance(value, dict):
            value = list(value.values())
        d, n = _shape(value, depth + 1 if key in _NESTING else depth)
        deepest, nodes = max(deepest, d), nodes + n
    return deepest, nodes


_UNCOUNTED = frozenset({"enum", "const", "default", "examples", "description", "title"})
_NESTING = frozenset({"properties", "items", "anyOf", "oneOf", "allOf"})


def _fits_catalog(tool: dict[str, Any]) -> bool:
    function = tool["function"]
    for schema in (function["parameters"], function.get("output_schema")):
        if schema is not None:
            depth, nodes = _shape(schema)
            if depth > MAX_SCHEMA_DEPTH or nodes > MAX_SCHEMA_NODES:
                return False
    return True


def _catalog_problems(tool: dict[str, Any]) -> list[str]:
    """What the planner's catalog validation says about this one tool (nothing: it is accepted)."""
    try:
        ToolCatalog.from_openai([tool])
    except CatalogError as exc:
        return [p.removeprefix("tools[0].") for p in exc.problems]
    return []

"""An OpenAPI document from untrusted text: bounded, parsed safely, validated, local references only.

Order of work, cheapest refusal first:

1. the size in bytes, before any parsing (`ImportLimits.max_bytes`);
2. JSON when the text starts with `{`, else YAML through a safe loader that refuses every alias
   (`*name`), so a "billion laughs" document cannot expand, keeps timestamps as the strings they
   were written as, and turns the integer keys YAML gives unquoted response codes (`200:`) into
   strings, as JSON would have them;
3. an `openapi` version of 3.0.x or 3.1.x, and no `$ref` outside the document (`#/...` only), so the
   validator below never fetches anything;
4. `openapi-spec-validator` (the 3.0 or 3.1 validator), stopping after the first few problems; any
   exception it raises (a dangling `$ref`, a recursion error) is a problem of the document too.

Every refusal is an `OpenApiInvalidError` listing the first problems, each shortened: the document
is never echoed back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from serving.errors import InvalidRequestError

MAX_PROBLEMS_SHOWN = 5
MAX_PROBLEM_CHARS = 300


@dataclass(frozen=True)
class ImportLimits:
    """What one document may cost. The defaults fit the planner's catalog limits (planner/catalog.py):
    an imported tool never has more arguments than a catalog accepts."""

    max_bytes: int = 4 * 2**20  # the document as uploaded
    max_operations: int = 500  # operations with an operationId
    max_arguments: int = 32  # arguments of one tool (parameters + flattened body properties)
    max_ref_expansions: int = 50_000  # `$ref`s inlined over the whole import
    max_ref_depth: int = 24  # `$ref`s nested inside one another (a deeper chain is refused)
    max_schema_nodes: int = 500_000  # schema objects written over the whole import, after expansion
    max_validation_problems: int = MAX_PROBLEMS_SHOWN


class OpenApiInvalidError(InvalidRequestError):
    """The document cannot be imported; `problems` holds the first few reasons (400 `openapi_invalid`)."""

    code = "openapi_invalid"

    def __init__(self, problems: list[str], *, hint: str | None = None) -> None:
        shown = [_short(p) for p in problems[:MAX_PROBLEMS_SHOWN]]
        more = len(problems) - len(shown)
        message = "invalid OpenAPI document: " + "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")
        super().__init__(message, param="document", hint=hint)
        self.problems = shown


def _short(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= MAX_PROBLEM_CHARS else flat[: MAX_PROBLEM_CHARS - 1] + "…"


class _AliasRefused(yaml.YAMLError):
    pass


_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when installed


class _BoundedLoader(_SAFE_LOADER):
    """Safe YAML without aliases: a node met a second time can only come from an alias."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        if node in self.constructed_objects or node in self.recursive_objects:
            mark = getattr(node, "start_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise _AliasRefused(f"YAML aliases are not accepted{where}: write the value out")
        return super().construct_object(node, deep=deep)


def _timestamp_as_text(loader: Any, node: Any) -> Any:
    return loader.construct_scalar(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


def parse_document(text: str | bytes, limits: ImportLimits) -> dict[str, Any]:
    """The document as JSON-compatible data; raises OpenApiInvalidError."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if len(raw) > limits.max_bytes:
        raise OpenApiInvalidError([f"the document is {len(raw)} bytes, at most {limits.max_bytes}"])
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OpenApiInvalidError([f"the document is not UTF-8 text ({exc.reason})"]) from None
    try:
        is_json = decoded.lstrip().startswith("{")
        data = json.loads(decoded) if is_json else yaml.load(decoded, Loader=_BoundedLoader)  # noqa: S506
    except RecursionError:
        raise OpenApiInvalidError(["the document nests too deeply"]) from None
    except (ValueError, yaml.YAMLError) as exc:
        raise OpenApiInvalidError([f"not JSON or YAML: {exc}"]) from None
    try:
        document = _json_keys(data)
    except RecursionError:
        raise OpenApiInvalidError(["the document nests too deeply"]) from None
    if not isinstance(document, dict):
        raise OpenApiInvalidError(["the document must be an object (openapi, info, paths, ...)"])
    return document


def _json_keys(value: Any) -> Any:
    """Object keys as strings (YAML reads `200:` as an integer); anything else JSON cannot hold is refused."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, (str, int, float)):  # bool is an int: YAML reads `yes:` as True
                raise OpenApiInvalidError([f"an object key of type {type(key).__name__} ({key!r:.40})"])
            out[str(key).lower() if isinstance(key, bool) else str(key)] = _json_keys(item)
        return out
    if isinstance(value, list):
        return [_json_keys(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise OpenApiInvalidError([f"a value of type {type(value).__name__} is not JSON"])


def openapi_version(document: dict[str, Any]) -> str:
    """The version family, 3.0 or 3.1; raises OpenApiInvalidError for anything else (Swagger 2.0 included)."""
    version = document.get("openapi")
    if isinstance(version, str) and version.startswith(("3.0.", "3.1.")):
        return version[:3]
    if "swagger" in document:
        raise OpenApiInvalidError(["Swagger 2.0 documents are not accepted: convert it to OpenAPI 3"])
    raise OpenApiInvalidError([f"`openapi` must be a 3.0.x or 3.1.x version string, got {version!r:.40}"])


def foreign_refs(document: Any) -> Iterator[str]:
    """Every `$ref` that does not point inside the document (walked iteratively)."""
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                yield ref
            elif "$ref" in node and not isinstance(ref, str):
                yield repr(ref)[:60]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def validate_document(document: dict[str, Any], limits: ImportLimits) -> str:
    """Check the document with openapi-spec-validator; returns "3.0" or "3.1"; raises OpenApiInvalidError."""
    version = openapi_version(document)
    outside = sorted(set(foreign_refs(document)))
    if outside:
        raise OpenApiInvalidError([f"$ref {ref!r} points outside the document (only #/... is read)" for ref in outside])
    from openapi_spec_validator.validation import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator

    validator_class = OpenAPIV31SpecValidator if version == "3.1" else OpenAPIV30SpecValidator
    problems: list[str] = []
    try:
        for error in validator_class(document).iter_errors():
            where = "/".join(str(part) for part in error.absolute_path)
            problems.append(f"{where or 'document'}: {error.message}")
            if len(problems) >= limits.max_validation_problems:
                break
    except RecursionError:
        problems.append("the document nests too deeply to validate")
    except Exception as exc:  # noqa: BLE001 - the validator raises on broken documents (e.g. a dangling $ref)
        problems.append(f"{type(exc).__name__}: {exc}")
    if problems:
        raise OpenApiInvalidError(problems)
    return version

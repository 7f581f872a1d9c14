"""NESTFUL (IBM, Apache-2.0) adapter: read ../shared/benchmarks/nestful by path, never copied here.

- spec → OpenAI tools (`arguments`/`query_parameters`/`parameters` → JSON Schema properties;
  `allowed_values` → enum; `output_parameters` → our `output_schema` extension);
- gold call sequences → our Plan format: `label: varN` → node id `nK` (in call order),
  `"$varN.x$"` → `"$nK.x"` (a reference and an edge; a list index `x[0]` becomes the path segment
  `x.0`), a reference inside longer text is kept as text and its edge goes to `depends_on`; the final
  `var_result` assembly is dropped;
- `default_value` → JSON Schema `default`, `format` is kept (both are hints a user's schema may carry).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_ROOT = Path(__file__).resolve().parent.parent.parent / "shared" / "benchmarks" / "nestful" / "non-executable"
_FULL_REF = re.compile(r"^\$(var\d+)((?:\.\w+|\[\d+\])*)\$$")
_INLINE_REF = re.compile(r"\$(var\d+)((?:\.[\w]+)*)\$")
_TYPES = {"string", "number", "integer", "boolean", "array", "object"}
_ARG_SAFE = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True)
class NestfulCase:
    id: str
    request: str
    plan: dict[str, Any]


def _schema(spec: dict[str, Any]) -> dict[str, Any]:
    kind = spec.get("type")
    schema: dict[str, Any] = {}
    if isinstance(kind, str):
        schema["type"] = kind if kind in _TYPES else "string"
    elif spec.get("allowed_values") is not None or "required" in spec:
        schema["type"] = "string"  # sgd specs carry no types; their values are strings
    if spec.get("allowed_values"):
        schema["enum"] = [str(v) for v in spec["allowed_values"]]
    if isinstance(spec.get("enum"), list):
        schema["enum"] = spec["enum"]
    if schema.get("type") == "array":
        schema["items"] = _schema(spec["items"]) if isinstance(spec.get("items"), dict) else {}
    if schema.get("type") == "object" and isinstance(spec.get("properties"), dict):
        schema["properties"] = {k: _schema(v) for k, v in spec["properties"].items()}
    if spec.get("description"):
        schema["description"] = str(spec["description"])[:300]
    if isinstance(spec.get("format"), str):
        schema["format"] = spec["format"]
    if spec.get("default_value") not in (None, ""):
        schema["default"] = spec["default_value"]
    return schema


def spec_to_tool(spec: dict[str, Any]) -> dict[str, Any]:
    args = spec.get("arguments") or spec.get("query_parameters") or spec.get("parameters") or {}
    props = {name: _schema(arg) for name, arg in args.items() if isinstance(arg, dict)}
    required = [name for name, arg in args.items() if isinstance(arg, dict) and arg.get("required")]
    outputs = {
        name: {"type": out.get("type") if out.get("type") in _TYPES else "string"}
        for name, out in (spec.get("output_parameters") or {}).items()
        if isinstance(out, dict)
    }
    function: dict[str, Any] = {
        "name": spec["name"],
        "description": str(spec.get("description", ""))[:500],
        "parameters": {"type": "object", "properties": props, "required": required},
    }
    if outputs:
        function["output_schema"] = {"type": "object", "properties": outputs}
    return {"type": "function", "function": function}


def spec_path(split: str, root: Path = DEFAULT_ROOT) -> Path:
    return root / f"non-executable-{split}-spec.json"


def data_path(split: str, root: Path = DEFAULT_ROOT) -> Path:
    return root / f"non-executable-{split}-data.json"


def load_tools(split: str, root: Path = DEFAULT_ROOT, *, path: Path | None = None) -> list[dict[str, Any]]:
    """OpenAI tools of a spec file (`path`, or the split's file under `root`), first spec of a name wins."""
    specs = json.loads((path or spec_path(split, root)).read_text())
    seen: set[str] = set()
    tools = []
    for spec in specs:
        if spec["name"] not in seen:
            seen.add(spec["name"])
            tools.append(spec_to_tool(spec))
    return tools


def convert_value(value: Any, labels: dict[str, str], deps: set[str]) -> Any:
    if isinstance(value, str):
        full = _FULL_REF.match(value)
        if full and full.group(1) in labels:
            return "$" + labels[full.group(1)] + re.sub(r"\[(\d+)\]", r".\1", full.group(2))
        for match in _INLINE_REF.finditer(value):
            if match.group(1) in labels:
                deps.add(labels[match.group(1)])
        return value
    if isinstance(value, list):
        return [convert_value(v, labels, deps) for v in value]
    if isinstance(value, dict):
        return {k: convert_value(v, labels, deps) for k, v in value.items()}
    return value


def record_to_plan(output: list[dict[str, Any]]) -> dict[str, Any]:
    labels: dict[str, str] = {}
    nodes: list[dict[str, Any]] = []
    for call in output:
        if call.get("name") == "var_result":
            continue
        node_id = f"n{len(nodes) + 1}"
        deps: set[str] = set()
        args = {k: convert_value(v, labels, deps) for k, v in (call.get("arguments") or {}).items()}
        node: dict[str, Any] = {"id": node_id, "tool": call["name"], "args": args}
        if deps:
            node["depends_on"] = sorted(deps)
        nodes.append(node)
        if call.get("label"):
            labels[str(call["label"])] = node_id
    return {"nodes": nodes}


def load_cases(
    split: str, root: Path = DEFAULT_ROOT, limit: int | None = None, *, path: Path | None = None
) -> list[NestfulCase]:
    """Requests with gold plans of a data file (`path`, or the split's file under `root`)."""
    data = json.loads((path or data_path(split, root)).read_text())
    cases = [NestfulCase(f"{split}-{i:03d}", row["input"], record_to_plan(row["output"])) for i, row in enumerate(data)]
    return cases[:limit] if limit else cases

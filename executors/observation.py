"""What a node execution leaves behind: a `NodeResult` with its metadata, and two short descriptions.

The result records the tool and its version, status, attempts, timestamps, duration, the SHA-256 of
the resolved arguments (input hash) and of the output, the success condition and its outcome, and a
structured error.

- `summary` (`summarize_result`) is for people: events, the CLI's progress. It shows the output's
  shape and a few scalar fields (short excerpts).
- What the re-planner sees (`observation_for_planner`, `failure_summary_for_planner`) is typed and
  bounded: status, error type, whether it is retryable, the output's field names, JSON types and
  counts, and the failed nodes' arguments as the plan wrote them (types and references). Never a
  value or a message from a tool: a tool's output is data from outside (a web page, a document) and
  text in it must not become an instruction to the planner.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from contract.plan import Plan, parse_reference

NodeStatus = Literal["succeeded", "failed", "skipped"]


def canonical_json(value: Any) -> str:
    """Stable JSON text: sorted keys, no spaces, UTF-8 kept, NaN/Infinity rejected."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_json(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


class NodeResult(BaseModel):
    """The outcome of one plan node in one round of a run."""

    model_config = ConfigDict(extra="forbid")

    node_id: str
    tool: str
    status: NodeStatus
    round: int = Field(default=0, description="Plan round: 0 for the first plan, +1 per re-plan.")
    tool_version: str | None = None
    attempts: int = Field(
        default=0, description="Tool calls made (0 when skipped, reused or rejected before the call)."
    )
    started_at: float | None = Field(default=None, description="Unix time the first attempt started.")
    finished_at: float | None = Field(default=None, description="Unix time the node settled.")
    duration_ms: float | None = None
    args: dict[str, JsonValue] | None = Field(default=None, description="Arguments after reference resolution.")
    input_hash: str | None = Field(default=None, description="SHA-256 of the canonical JSON of the resolved args.")
    output: JsonValue = None
    output_sha256: str | None = None
    success_condition: str | None = None
    condition_passed: bool | None = Field(
        default=None, description="Outcome of success_condition; None if not checked."
    )
    error: dict[str, JsonValue] | None = Field(default=None, description="{error, retryable, type} when not succeeded.")
    fallback_for: str | None = Field(default=None, description="Primary node this standby node stood in for.")
    reused_from: str | None = Field(default=None, description="'r<round>/<node>' whose identical result was reused.")
    summary: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"


def summarize_result(result: NodeResult, *, max_chars: int = 400) -> str:
    """One bounded line about a node for the planner: status, then the output's shape or the error."""
    if result.status == "succeeded":
        body = summarize_output(result.output, max_chars=max_chars)
        prefix = "reused; " if result.reused_from else ""
        return _truncate(f"{prefix}{body}", max_chars)
    error = result.error or {}
    kind = error.get("type", "error")
    retry = "retryable" if error.get("retryable") else "not retryable"
    return _truncate(f"{result.status} ({kind}, {retry}): {error.get('error', '')}", max_chars)


def summarize_output(output: Any, *, max_chars: int = 400) -> str:
    """Keys, list sizes and a few scalar fields of a JSON value, at most `max_chars` long."""
    if isinstance(output, dict):
        parts = [_describe_field(key, value) for key, value in list(output.items())[:12]]
        if len(output) > 12:
            parts.append(f"… +{len(output) - 12} fields")
        return _truncate("; ".join(parts), max_chars)
    if isinstance(output, list):
        first = f", first: {_inline(output[0])}" if output else ""
        return _truncate(f"list of {len(output)}{first}", max_chars)
    return _truncate(_scalar(output), max_chars)


def _describe_field(key: str, value: Any) -> str:
    if isinstance(value, list):
        first = f" (first: {_inline(value[0])})" if value else ""
        return f"{key}: {len(value)} items{first}"
    if isinstance(value, dict):
        return f"{key}: {_inline(value)}"
    return f"{key}={_scalar(value)}"


_KEY_HINTS = ("id", "name", "price", "total", "rating", "capacity", "date", "depart")


def _inline(value: Any) -> str:
    """A compact excerpt of an object: up to 4 scalar fields, identifying and money fields first."""
    if isinstance(value, dict):
        keys = [k for k, v in value.items() if not isinstance(v, (dict, list))]
        keys.sort(key=lambda k: next((i for i, hint in enumerate(_KEY_HINTS) if hint in k), len(_KEY_HINTS)))
        scalars = [f"{k}={_scalar(value[k])}" for k in keys[:4]]
        more = " …" if len(value) > len(scalars) else ""
        return "{" + ", ".join(scalars) + more + "}"
    if isinstance(value, list):
        return f"[{len(value)} items]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(_truncate(value, 40))
    if isinstance(value, float):
        return f"{value:g}"
    return _truncate(str(value), 40)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


# ---- what the re-planner sees: types and counts, never a tool's text ------------------------------
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")  # a field name shown as such; others are only counted
_MAX_FIELDS = 12
_MAX_DEPTH = 2


def observation_for_planner(result: NodeResult, *, max_chars: int = 400) -> str:
    """One typed line about a node for the re-planner: status, error type, output shape."""
    if result.status == "succeeded":
        prefix = "reused; " if result.reused_from else ""
        return _truncate(f"{prefix}succeeded; output {describe_shape(result.output)}", max_chars)
    error = result.error or {}
    kind = str(error.get("type", "error"))
    kind = kind if _NAME.match(kind) else "error"
    retry = "retryable" if error.get("retryable") is True else "not retryable"
    return f"{result.status} ({kind}, {retry})"


def describe_shape(value: Any, depth: int = 0) -> str:
    """The JSON type of a value; objects with their field names, lists with their length and the
    shape of their first item, to depth 2. No value is shown."""
    if isinstance(value, dict):
        if depth >= _MAX_DEPTH:
            return f"object({len(value)} fields)"
        named = [key for key in value if isinstance(key, str) and _NAME.match(key)][:_MAX_FIELDS]
        parts = [f"{key}: {describe_shape(value[key], depth + 1)}" for key in named]
        if len(value) > len(named):
            parts.append(f"+{len(value) - len(named)} more fields")
        return "object{" + ", ".join(parts) + "}"
    if isinstance(value, list):
        return f"list[{len(value)}]" + (f" of {describe_shape(value[0], depth + 1)}" if value else "")
    return _json_type(value)


def failure_summary_for_planner(
    plan: Plan,
    round_: int,
    lost: Sequence[str],
    stop: Mapping[str, Any] | None,
    results: Mapping[str, NodeResult],
    *,
    max_chars: int = 2000,
) -> str:
    """What went wrong in a round, for the re-planner: one typed line per failed or skipped node, with
    its arguments as the plan wrote them (literal types, `$nK.field` references), never the resolved
    values (those can come from a tool's output)."""
    nodes = {node.id: node for node in plan.nodes}
    lines = [f"Round {round_} failed; nodes without output: {', '.join(n for n in lost if n in nodes) or 'none'}."]
    if stop is not None:
        kind = str(stop.get("type", "stopped"))
        lines.append(f"Stopped: {kind if _NAME.match(kind) else 'stopped'}.")
    for node_id, result in sorted(results.items()):
        node = nodes.get(node_id)
        if result.status == "succeeded" or node is None:
            continue
        args = ", ".join(f"{name}={_planned_arg(value)}" for name, value in node.args.items())
        lines.append(f"- {node.id} {node.tool}: {observation_for_planner(result)}; args: {args or 'none'}")
    return _truncate("\n".join(lines), max_chars)


def _planned_arg(value: Any) -> str:
    if parse_reference(value) is not None:
        return str(value)
    if isinstance(value, list):
        shown = ", ".join(_planned_arg(item) for item in value[:6])
        return f"[{shown}{', …' if len(value) > 6 else ''}]"
    return _json_type(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    return "value"

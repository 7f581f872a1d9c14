"""The plan: a DAG of tool calls, shared by the planner (which writes it) and the executors (which run it).

A plan is a list of nodes `{id, tool, args, depends_on, success_condition?, fallback?}`.

- `id` matches `n<k>` (`n1` … `n99`), unique within the plan.
- `args` is a JSON object; any string value of the exact form `"$n1"` or `"$n1.field.sub"` is a
  *reference* to an upstream node's output (the whole output, or a field path in it). A reference is
  also a dependency edge, whether or not `depends_on` lists it.
- `depends_on` lists extra ordering edges (node ids that must finish first).
- `success_condition` is an optional JMESPath expression evaluated against the node's output; a
  falsy result marks the node failed. It is data, never code: nothing evaluates it with `eval`.
- `fallback` names a standby node that runs only when this node fails for good; its output then
  stands in for this node's output wherever `$<this id>` is referenced.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

NODE_ID_PATTERN = r"^n[1-9][0-9]?$"
MAX_PLAN_NODES = 99  # ids are n1 … n99, so a longer plan necessarily repeats an id
REFERENCE_RE = re.compile(r"^\$(n[1-9][0-9]?)(?:\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*))?$")


@dataclass(frozen=True)
class Reference:
    """`$<node>.<path>` inside a node's arguments; `path` is empty for the whole output."""

    node: str
    path: tuple[str, ...]
    arg_path: tuple[str | int, ...]  # where in the referencing node's args it sits

    def __str__(self) -> str:
        return "$" + ".".join((self.node, *self.path))


def parse_reference(value: Any) -> tuple[str, tuple[str, ...]] | None:
    """(node id, field path) when `value` is a reference string, else None."""
    if not isinstance(value, str):
        return None
    match = REFERENCE_RE.match(value)
    if match is None:
        return None
    node, path = match.group(1), match.group(2)
    return node, tuple(path.split(".")) if path else ()


def iter_references(args: Any, at: tuple[str | int, ...] = ()) -> Iterator[Reference]:
    """Every reference in a JSON value, depth first, with its location."""
    parsed = parse_reference(args)
    if parsed is not None:
        yield Reference(parsed[0], parsed[1], at)
    elif isinstance(args, dict):
        for key, value in args.items():
            yield from iter_references(value, (*at, key))
    elif isinstance(args, list):
        for index, value in enumerate(args):
            yield from iter_references(value, (*at, index))


def count_first(value: Any, limit: int) -> Any:
    """Refuse a list longer than `limit` before any of its items is validated: pydantic checks
    `max_length` only after validating every item (a client plan of 43,000 nodes cost 0.1–0.4 s)."""
    if isinstance(value, list) and len(value) > limit:
        raise ValueError(f"at most {limit} items, got {len(value)}")
    return value


class PlanNode(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=NODE_ID_PATTERN, description="Node id, n1 … n99, unique in the plan.")
    tool: str = Field(min_length=1, max_length=64, description="Name of a tool in the catalog.")
    args: dict[str, JsonValue] = Field(default_factory=dict, description="Tool arguments; may hold references.")
    depends_on: list[str] = Field(
        default_factory=list, max_length=MAX_PLAN_NODES, description="Ids of nodes that must finish first."
    )
    success_condition: str | None = Field(
        None, max_length=500, description="JMESPath over the output; falsy result = node failed."
    )
    fallback: str | None = Field(None, pattern=NODE_ID_PATTERN, description="Standby node run if this fails.")

    @field_validator("depends_on", mode="before")
    @classmethod
    def _count_dependencies_first(cls, value: Any) -> Any:
        return count_first(value, MAX_PLAN_NODES)

    def references(self) -> list[Reference]:
        return list(iter_references(self.args))

    def upstream(self) -> set[str]:
        """All nodes this one waits for: explicit `depends_on` plus every referenced node."""
        return set(self.depends_on) | {ref.node for ref in self.references()}


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: list[PlanNode] = Field(default_factory=list, max_length=MAX_PLAN_NODES)

    @field_validator("nodes", mode="before")
    @classmethod
    def _count_nodes_first(cls, value: Any) -> Any:
        return count_first(value, MAX_PLAN_NODES)

    def node(self, node_id: str) -> PlanNode:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def ids(self) -> list[str]:
        return [node.id for node in self.nodes]

    def edges(self) -> set[tuple[str, str]]:
        """Dependency pairs (upstream, downstream), from `depends_on` and from references."""
        return {(up, node.id) for node in self.nodes for up in node.upstream()}

    def standby_ids(self) -> set[str]:
        """Nodes that only run as some other node's fallback."""
        return {node.fallback for node in self.nodes if node.fallback is not None}

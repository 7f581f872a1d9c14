"""A plan as a readable tree: roots first, each node under the nodes it waits for."""

from __future__ import annotations

import json

from contract.plan import Plan, PlanNode


def _label(node: PlanNode) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in node.args.items())
    extra = []
    if node.fallback:
        extra.append(f"fallback {node.fallback}")
    if node.success_condition:
        extra.append(f"ok if {node.success_condition}")
    return f"{node.id} {node.tool}({args})" + (f"  [{'; '.join(extra)}]" if extra else "")


def render_tree(plan: Plan) -> str:
    """Each node appears once, under its last upstream node; other upstream links are noted (⇐)."""
    if not plan.nodes:
        return "(empty plan)"
    order = plan.ids()
    parent: dict[str, str | None] = {}
    for node in plan.nodes:
        ups = sorted(node.upstream(), key=lambda n: order.index(n) if n in order else len(order))
        parent[node.id] = ups[-1] if ups else None
    children: dict[str | None, list[PlanNode]] = {}
    for node in plan.nodes:
        children.setdefault(parent[node.id], []).append(node)
    lines: list[str] = []

    def walk(node: PlanNode, prefix: str, last: bool, depth: int) -> None:
        others = sorted(node.upstream() - {parent[node.id]} - {None})
        note = f"  ⇐ {', '.join(others)}" if others else ""
        branch = "" if depth == 0 else ("└─ " if last else "├─ ")
        lines.append(f"{prefix}{branch}{_label(node)}{note}")
        kids = children.get(node.id, [])
        for index, child in enumerate(kids):
            walk(child, prefix + ("" if depth == 0 else ("   " if last else "│  ")), index == len(kids) - 1, depth + 1)

    for root in children.get(None, []):
        walk(root, "", True, 0)
    return "\n".join(lines)

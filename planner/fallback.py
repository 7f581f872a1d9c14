"""The generic rule-based planner: the embedding proposal with drafted arguments.

Used only after the model path failed, for catalogs no pack covers, and reported as
`path == "fallback"` (never counted as the model's accuracy). Tools: the selection's proposed sequence
(planner/selection.py); arguments: the draft of planner/drafting.py. A required argument the draft
cannot fill takes the whole output of the node before (`$nK`); without one the node is dropped, and a
plan with no node is no plan.
"""

from __future__ import annotations

from typing import Any

from contract.errors import PlanstackBaseError
from contract.plan import Plan
from planner.catalog import ToolCatalog
from planner.drafting import draft_args
from planner.selection import Selection
from planner.upstream import Upstream
from planner.values import RequestValues


class FallbackError(PlanstackBaseError):
    """The rule-based planner has no plan either; the planner reports it inside `PlanningFailed`."""


def proposal_plan(
    selection: Selection, values: RequestValues, catalog: ToolCatalog, *, max_nodes: int, defaults: bool = False
) -> Plan:
    nodes: list[dict[str, Any]] = []
    upstream: list[Upstream] = []
    tools = selection.sequence[:max_nodes]
    for index, name in enumerate(tools):
        tool = catalog.get(name)
        step = selection.step_for(index, name, tools)
        span = (step.start, step.end) if step is not None else None
        text = step.text if step is not None else values.text
        args = draft_args(tool, values, span, upstream, step=text, defaults=defaults)
        missing = [arg for arg in tool.required if arg not in args]
        if missing and not upstream:
            continue
        for arg in missing:
            args[arg] = f"${upstream[-1].node_id}"
        node_id = f"n{len(nodes) + 1}"
        nodes.append({"id": node_id, "tool": name, "args": args})
        upstream.append(Upstream(node_id, tool, args))
    if not nodes:
        raise FallbackError(f"no proposed tool could be filled from the request (proposal: {tools or 'none'})")
    return Plan.model_validate({"nodes": nodes})

"""The generic rule-based planner: the embedding proposal with drafted arguments.

Used only after the model path failed, for catalogs no pack covers, and reported as
`path == "fallback"` (never counted as the model's accuracy). Tools: the selection's proposed sequence
(planner/selection.py); arguments: the draft of planner/drafting.py, a required property selector's from
planner/selectors.py (completed once nested). A required argument the draft
cannot fill takes the whole output of the node before (`$nK`); without one the node is dropped, and a
plan with no node is no plan.
"""

from __future__ import annotations

import time
from typing import Any

from contract.errors import PlanstackBaseError
from contract.plan import Plan
from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.drafting import draft_args
from planner.flat_args import nest_plan
from planner.nodes import PreparedRequest
from planner.results import Attempt, PlanningFailed, PlanResult
from planner.selection import Selection
from planner.selectors import complete_plan, selector, selector_options
from planner.upstream import Upstream
from planner.validation import PlanValidator
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
        for arg in tool.required:  # `part`: property names, completed from the node's arguments once nested
            if arg not in args and (sel := selector(tool.properties.get(arg))) is not None:
                args[arg] = selector_options(tool, arg, sel)[0]
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


def fallback_result(
    req: PreparedRequest,
    validator: PlanValidator,
    config: PlannerConfig,
    attempts: list[Attempt],
    timings: dict[str, float],
    reason: str,
    described: dict[str, Any],
) -> PlanResult:
    """After the model path failed (`reason`): an applicable pack's rule-based plan, else the proposal's,
    validated like the model's; `PlanningFailed` (with every attempt) when there is none or it is invalid."""
    if not config.fallback_enabled:
        raise PlanningFailed(f"model path failed: {reason}", attempts)
    t0 = time.perf_counter()
    today = config.effective_today()
    plan = next((p for pack in req.packs if (p := pack.fallback_plan(req.text, req.catalog, today))), None)
    if plan is None:
        try:
            plan = proposal_plan(
                req.selection, req.values, req.catalog, max_nodes=config.max_nodes, defaults=config.stages.defaults
            )
        except FallbackError as exc:
            raise PlanningFailed(f"model path failed ({reason}); fallback: {exc}", attempts) from exc
    nested = nest_plan(plan.model_dump(exclude_none=True), req.catalog)
    report = validator.validate(complete_plan(nested, req.given or req.catalog))
    timings["fallback_s"] = time.perf_counter() - t0
    if not report.ok or report.plan is None:
        raise PlanningFailed(f"model path failed ({reason}); fallback plan invalid: {report.error}", attempts)
    return PlanResult(
        report.plan,  # nested back as the catalog declares its objects, as validated
        "fallback",
        attempts,
        report,
        timings,
        fallback_reason=reason,
        catalog_hash=req.catalog.hash,
        selection=described,
        packs=[p.name for p in req.packs],
    )

"""The planner's answers other than a plan: `needs_input` (a required value nothing can fill, or a value
the request wrote that a business rule refuses) and the record of each attempt (planner/results.py)."""

from __future__ import annotations

import json
from typing import Any

from planner.decoding import Decoded
from planner.nodes import MissingInput, PreparedRequest
from planner.results import Attempt, PlanResult
from planner.retries import RetryPlan
from planner.validation import ValidationReport
from planner.values import RequestValues

_ONE_VALUE_RULES = frozenset(("date_in_past", "below_min", "above_max"))  # rule issues about one value alone


def needs_input_result(
    req: PreparedRequest,
    missing: list[MissingInput],
    attempts: list[Attempt],
    timings: dict[str, float],
    described: dict[str, Any],
    packs: list[str],
) -> PlanResult:
    reason = "the request does not give " + "; ".join(f"{m.tool}.{m.argument} ({m.reason})" for m in missing[:8])
    return PlanResult(
        None,
        "needs_input",
        attempts,
        None,
        timings,
        None,
        req.catalog.hash,
        reason,
        described,
        packs,
        missing=[m.as_dict() for m in missing],
    )


def refused_own_values(
    candidate: dict[str, Any], report: ValidationReport, values: RequestValues
) -> list[MissingInput]:
    """Business-rule issues that refuse a value the request itself wrote (a past date with its year, an
    amount over a limit): the user must change it, the planner must not. Empty unless every issue is one."""
    error = report.error
    if error is None or error.layer != "rules" or not error.issues:
        return []
    if any(issue.code not in _ONE_VALUE_RULES for issue in error.issues):
        return []  # a rule over two values (an order of dates): another of the request's values may be right
    own = {json.dumps(c.value): c for c in values.candidates if c.kind != "ngram"}
    nodes = {n.get("id"): n for n in candidate.get("nodes", []) if isinstance(n, dict)}
    out: list[MissingInput] = []
    for issue in error.issues:
        node = nodes.get(issue.node or "")
        arg = (issue.path or "").split(".")[0]
        if node is None or arg not in node.get("args", {}) or json.dumps(node["args"][arg]) not in own:
            return []
        refused = own[json.dumps(node["args"][arg])]
        if any(c.kind == refused.kind and c.iso != refused.iso and c.value != refused.value for c in own.values()):
            return []  # the request offers another value of this kind: a retry may take it
        out.append(
            MissingInput(str(node["id"]), str(node["tool"]), arg, f"the request's value is refused: {issue.message}")
        )
    return out


def attempt_record(number: int, decoded: Decoded, plan_try: RetryPlan) -> Attempt:
    return Attempt(
        number=number,
        raw_text=decoded.raw_text,
        prompt_tokens=decoded.prompt_tokens,
        completion_tokens=decoded.completion_tokens,
        latency_s=round(decoded.latency_s, 4),
        calls=len(decoded.calls),
        forced=decoded.forced,
        grammars=decoded.grammars,
        decode_s_per_token=decoded.decode_s_per_token,
        tools_from=decoded.tools_from,
        grounding=plan_try.grounding,
        changes=list(plan_try.changes),
        call_timings=[
            {
                "ttft_s": c.ttft_s,
                "latency_s": round(c.latency_s, 4),
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "schema": schema,
            }
            for c, schema in zip(decoded.calls, decoded.schemas, strict=True)
        ],
    )

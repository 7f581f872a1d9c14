"""What went wrong in a round: the run's structured error, the re-planner's summary, whether the run stops."""

from __future__ import annotations

from typing import Any

from contract.plan import Plan
from executors.errors import structured_error
from executors.observation import NodeResult, failure_summary_for_planner
from executors.scheduler import RoundOutcome
from executors.stores import RunRecord


def failure_list(outcome: RoundOutcome) -> list[dict[str, Any]]:
    """Nodes that failed or were skipped in a round, root causes (failed) first."""
    rows = [r for r in outcome.results.values() if r.status != "succeeded"]
    rows.sort(key=lambda r: (r.status != "failed", r.node_id))
    return [{"node_id": r.node_id, "tool": r.tool, "status": r.status, "error": r.error} for r in rows]


def failure_summary(plan: Plan, outcome: RoundOutcome) -> str:
    """What went wrong, for the re-planner: typed lines only (executors/observation.py), never a
    tool's message or a value resolved from an output."""
    return failure_summary_for_planner(plan, outcome.round, outcome.lost, outcome.stop, outcome.results)


def failure_signature(result: NodeResult) -> tuple[str, str, str]:
    return (result.tool, str((result.error or {}).get("type", "")), result.input_hash or "")


def stop_reason(
    record: RunRecord,
    outcome: RoundOutcome,
    failures: list[dict[str, Any]],
    earlier: list[NodeResult],
    max_replans: int,
    can_replan: bool,
) -> dict[str, Any] | None:
    """Why this failed round ends the run, or None when a re-plan may help. The re-plan budget is
    counted from the operator's last resume (`record.replans` is reset then)."""
    if outcome.stop is not None:
        return outcome.stop
    first: dict[str, Any] = failures[0] if failures else {"node_id": "?", "error": {"error": "no output"}}
    what = f"{first['node_id']} ({first.get('tool')}): {(first.get('error') or {}).get('error', 'failed')}"
    if not can_replan:
        return structured_error(f"node {what}", "node_failed")
    open_tools = sorted({f["tool"] for f in failures if (f.get("error") or {}).get("type") == "circuit_open"})
    if open_tools:
        return structured_error(
            f"circuit breaker open for {', '.join(open_tools)}: the tool keeps failing; not re-planning",
            "circuit_open",
            retryable=True,
        )
    if record.replans >= max_replans:
        return structured_error(f"re-plan budget spent ({max_replans}); last failure: {what}", "replans_exhausted")
    seen = {failure_signature(r) for r in earlier if r.round < record.round and r.status == "failed"}
    now = {failure_signature(r) for r in outcome.results.values() if r.status == "failed"}
    if now and now <= seen:
        return structured_error(f"the new plan failed exactly as before: {what}", "repeated_failure")
    return None

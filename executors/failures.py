"""What went wrong in a round, as the run's structured error and as the re-planner's summary."""

from __future__ import annotations

from typing import Any

from executors.observation import NodeResult, failure_summary_for_planner
from executors.scheduler import RoundOutcome
from planner.plan import Plan


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

"""What went wrong in a round, as the run's structured error and as the re-planner's summary."""

from __future__ import annotations

from typing import Any

from executors.observation import NodeResult, canonical_json
from executors.scheduler import RoundOutcome
from planner.plan import Plan


def failure_list(outcome: RoundOutcome) -> list[dict[str, Any]]:
    """Nodes that failed or were skipped in a round, root causes (failed) first."""
    rows = [r for r in outcome.results.values() if r.status != "succeeded"]
    rows.sort(key=lambda r: (r.status != "failed", r.node_id))
    return [{"node_id": r.node_id, "tool": r.tool, "status": r.status, "error": r.error} for r in rows]


def failure_summary(plan: Plan, outcome: RoundOutcome) -> str:
    """What went wrong, for the planner: one line per failed or skipped node, bounded."""
    lines = [f"Round {outcome.round} failed; nodes without output: {', '.join(outcome.lost) or 'none'}."]
    if outcome.stop is not None:
        lines.append(f"Stopped: {outcome.stop['error']}")
    for result in sorted(outcome.results.values(), key=lambda r: r.node_id):
        if result.status == "succeeded":
            continue
        args = ""
        if result.args is not None:
            text = canonical_json(result.args)
            args = " args=" + (text if len(text) <= 160 else text[:159] + "…")
        lines.append(f"- {result.node_id} {result.tool}: {result.summary}{args}")
    return "\n".join(lines)[:2000]


def failure_signature(result: NodeResult) -> tuple[str, str, str]:
    return (result.tool, str((result.error or {}).get("type", "")), result.input_hash or "")

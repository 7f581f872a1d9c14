"""`RunObserver`: the scheduler's hooks for one driven run — commit each result (fenced on the run's
lease, capped in size) before dependants are dispatched, and append the run's node events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contract.plan import PlanNode
from executors.observation import NodeResult
from executors.quotas import cap_output
from executors.stores import EventType

if TYPE_CHECKING:
    from executors.runs import RunService, _LiveRun

_SETTLED_EVENTS: dict[str, EventType] = {
    "succeeded": "node_finished",
    "failed": "node_failed",
    "skipped": "node_skipped",
}


class RunObserver:
    """Scheduler hooks of one run: commit results (fenced on the run's lease), append events."""

    def __init__(self, service: RunService, live: _LiveRun) -> None:
        self._service = service
        self._live = live

    async def node_started(self, node: PlanNode, round_: int) -> None:
        await self._service.emit(self._live, "node_started", round_=round_, node_id=node.id, data={"tool": node.tool})

    async def node_retrying(
        self, node: PlanNode, round_: int, attempt: int, delay_s: float, error: dict[str, Any]
    ) -> None:
        data = {"tool": node.tool, "attempt": attempt, "delay_s": round(delay_s, 3), "error": error}
        await self._service.emit(self._live, "node_retrying", round_=round_, node_id=node.id, data=data)

    async def node_settled(self, result: NodeResult) -> NodeResult:
        """Commit the result; the COMMITTED one is returned, and it is what dependants are built from."""
        service = self._service
        capped = cap_output(result, service.runs_config, summary_chars=service.config.summary_chars)
        stored = await service.store.save_result(self._live.lease, capped)
        type_ = _SETTLED_EVENTS[stored.status]
        data = {
            "tool": stored.tool,
            "status": stored.status,
            "attempts": stored.attempts,
            "duration_ms": stored.duration_ms,
            "summary": stored.summary,
            "error": stored.error,
            "output_sha256": stored.output_sha256,
            "reused_from": stored.reused_from,
            "fallback_for": stored.fallback_for,
        }
        await service.emit(self._live, type_, round_=stored.round, node_id=stored.node_id, data=data)
        return stored

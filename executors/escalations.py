"""Escalations: a run that ended for good is pushed to a person instead of simply ending `failed`.

A run stopped by a step or time cap, an open circuit breaker, a spent re-plan budget, a failure
that repeats, a failed node with no re-planner, a failed re-plan or an expired approval (the kinds
in `escalations.on`) ends `failed` AND with an open escalation: it is in the tenant's queue
(`GET /v1/escalations`) with its structured error until someone

- resumes it: the same plan runs again as a new round (results obtained so far are reused, failed
  and skipped nodes run again), with the step and re-plan budgets counted afresh;
- re-plans it with an edited plan (validated like any client plan by the caller): that plan runs
  as a new round, reusing what matches;
- or closes it with a note.

The escalation records who handled it (tenant + name) and when; a resumed run that fails again
for good is escalated again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contract.plan import Plan
from executors.approvals import ApprovalDecision, ApprovalState, Decider
from executors.errors import ExecutorError, RunNotFound

if TYPE_CHECKING:
    from executors.runs import RunService

Action = Literal["resume", "replan", "close"]
_STATE_OF: dict[Action, Literal["resumed", "replanned", "closed"]] = {
    "resume": "resumed",
    "replan": "replanned",
    "close": "closed",
}
DEFAULT_KINDS = [
    "step_cap",
    "run_timeout",
    "circuit_open",
    "replans_exhausted",
    "repeated_failure",
    "node_failed",
    "replan_failed",
    "approval_expired",
    "internal_error",
]


class EscalationsConfig(BaseModel):
    """Settings section `escalations`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    on: list[str] = Field(
        default_factory=lambda: list(DEFAULT_KINDS),
        description="Error types of a failed run that open an escalation (a rejection by a person does not).",
    )
    max_note_chars: int = Field(default=2000, ge=1, le=20_000, description="Longest note kept when closing.")


class NotEscalated(ExecutorError):
    """The run has no open escalation (never had one, or someone handled it first)."""

    kind = "not_escalated"
    status = 409
    type = "invalid_request_error"


def opened(config: EscalationsConfig, error: dict[str, Any] | None) -> dict[str, Any] | None:
    """The escalation a failed run opens, or None when its error is not one that escalates."""
    kind = str((error or {}).get("type", ""))
    if kind not in config.on:
        return None
    return {"state": "open", "reason": kind, "opened_at": time.time(), "error": str((error or {}).get("error", ""))}


def handled(escalation: dict[str, Any] | None, action: Action, by: Decider, note: str | None) -> dict[str, Any]:
    """The escalation after an operator's action."""
    return {
        **(escalation or {}),
        "state": _STATE_OF[action],
        "handled_by": by.model_dump(),
        "handled_at": time.time(),
        "note": note,
    }


async def reopen(
    service: RunService, tenant: str, run_id: str, action: Literal["resume", "replan"], by: Decider, plan: Plan | None
) -> int:
    """Run an escalated run again as a new round (its plan, or `plan`); returns that round. Exactly
    one operator wins (`NotEscalated` for the others)."""
    record = await service.store.get_run(tenant, run_id)
    if record is None:
        raise RunNotFound(f"run {run_id!r} not found")
    escalation = record.escalation or {}
    if record.status != "failed" or escalation.get("state") != "open":
        raise NotEscalated(f"run {run_id!r} has no open escalation")
    new_round = record.round + 1
    # The operator chose this plan: it counts as approved as a whole (tool approvals still apply).
    consent = ApprovalDecision(
        verdict="approved", kind="plan", round=new_round, by=by, at=time.time(), waited_s=0.0, reason=action
    )
    state = handled(escalation, action, by, None)
    reopened = await service.reopen(
        tenant,
        run_id,
        "escalated",
        ("escalation_reopened", {**state, "round": new_round}),
        approval=ApprovalState.of(record).decided(consent),
        escalation=state,
        plan=plan or record.plan,
        round_=new_round,
        replans=0,
        budget_round=new_round,
    )
    if not reopened:
        raise NotEscalated(f"run {run_id!r} has no open escalation any more: someone handled it first")
    service.steering.observer.escalation_handled(tenant, action)
    return new_round


async def close(service: RunService, tenant: str, run_id: str, by: Decider, note: str | None) -> dict[str, Any]:
    record = await service.store.get_run(tenant, run_id)
    if record is None:
        raise RunNotFound(f"run {run_id!r} not found")
    limit = service.steering.escalations.max_note_chars
    state = handled(record.escalation, "close", by, None if note is None else note[:limit])
    if not await service.store.close_escalation(tenant, run_id, state):
        raise NotEscalated(f"run {run_id!r} has no open escalation")
    service.steering.observer.escalation_handled(tenant, "close")
    return state

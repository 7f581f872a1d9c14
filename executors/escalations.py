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
for good is escalated again. This module is the state and its transitions only; the actions are
`executors.operator_actions`, the opening is the driver's (`executors.driver`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from executors.approvals import Decider
from executors.errors import ExecutorError
from executors.stores import EscalationState, RunRecord

Action = Literal["resume", "replan", "close"]
_STATE_OF: dict[Action, EscalationState] = {"resume": "resumed", "replan": "replanned", "close": "closed"}
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


class Escalation(BaseModel):
    """What a run's record keeps (`RunRecord.escalation`): opened with the reason, then handled once.
    Only the fields a transition set are recorded (`as_record`): an open escalation has no handler."""

    model_config = ConfigDict(extra="forbid")

    state: EscalationState
    reason: str = Field(description="The error type that opened it.")
    opened_at: float
    error: str = Field(description="The run's error message.")
    handled_by: Decider | None = None
    handled_at: float | None = None
    note: str | None = None

    @classmethod
    def opened(cls, config: EscalationsConfig, error: dict[str, Any] | None, *, now: float) -> Escalation | None:
        """The escalation a failed run opens, or None when its error is not one that escalates."""
        kind = str((error or {}).get("type", ""))
        if kind not in config.on:
            return None
        return cls(state="open", reason=kind, opened_at=now, error=str((error or {}).get("error", "")))

    @classmethod
    def of(cls, record: RunRecord) -> Escalation | None:
        return None if record.escalation is None else cls.model_validate(record.escalation)

    @property
    def is_open(self) -> bool:
        return self.state == "open"

    def handled(self, action: Action, by: Decider, note: str | None, *, now: float) -> Escalation:
        """The escalation after an operator's action."""
        changes = {"state": _STATE_OF[action], "handled_by": by, "handled_at": now, "note": note}
        return Escalation.model_validate({**self.model_dump(exclude_unset=True), **changes})

    def as_record(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True)

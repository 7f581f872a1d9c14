"""What the run store holds and answers with: run records, events, leases, usage, purge reports."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contract.plan import Plan

RunStatus = Literal["running", "succeeded", "failed", "interrupted", "awaiting_approval", "requires_action", "no_plan"]
EventType = Literal[
    "run_started",
    "node_started",
    "node_retrying",
    "node_finished",
    "node_failed",
    "node_skipped",
    "replan",
    "awaiting_approval",
    "approval_decided",
    "escalated",
    "escalation_reopened",
    "tool_call_required",
    "tool_output_received",
    "run_finished",
]
EscalationState = Literal["open", "resumed", "replanned", "closed"]
ReopenFrom = Literal["awaiting_approval", "escalated", "requires_action"]
"""What `RunStore.reopen` expects of a run: paused for approval, failed with an open escalation, or
paused until the calling app answers its tool calls."""
TERMINAL_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "no_plan"})


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    tenant: str
    request: str
    plan: Plan = Field(description="The plan of the current round.")
    status: RunStatus = "running"
    round: int = 0
    replans: int = 0
    error: dict[str, Any] | None = Field(default=None, description="Structured explanation when the run failed.")
    created_at: float = 0.0
    updated_at: float = 0.0
    lease_owner: str | None = Field(default=None, description="Replica that holds (or last held) the lease.")
    lease_expires_at: float | None = None
    driven: bool = Field(default=False, description="A live lease is held: some replica executes the run now.")
    approval: dict[str, Any] | None = Field(
        default=None, description="Approval state: the pending request, if any, and the decisions."
    )
    escalation: dict[str, Any] | None = Field(
        default=None, description="Escalation of a run that ended for good: state, reason, who handled it."
    )
    webhook_url: str | None = Field(default=None, description="Where run events are POSTed (executors.webhooks).")
    planner: dict[str, Any] | None = Field(
        default=None, description="How the first plan was made (path, attempts, timings), as the gateway recorded it."
    )
    budget_round: int = Field(
        default=0, description="First round counted against the step and re-plan budgets (an operator resets it)."
    )
    tools: dict[str, Any] | None = Field(
        default=None,
        description="The tool definitions the run was planned and executed with (toolsets, the caller's own "
        "tools, built-in steps); None: the gateway's built-in catalog.",
    )
    action: dict[str, Any] | None = Field(
        default=None, description="Tool calls the run waits for the calling app (or a person) to answer."
    )

    @property
    def effective_status(self) -> RunStatus:
        """`interrupted` for a run recorded as running whose driver is gone (its lease expired)."""
        return "interrupted" if self.status == "running" and not self.driven else self.status


class RunEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    seq: int
    type: EventType
    round: int = 0
    node_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    ts: float = 0.0


class WebhookDelivery(BaseModel):
    """The delivery of one run event to the run's webhook."""

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(description="The event's sequence number in the run.")
    event: str
    state: Literal["pending", "delivered", "failed"]
    attempts: int = 0
    status_code: int | None = None
    error: str | None = None
    updated_at: float = 0.0


@dataclass(frozen=True)
class Lease:
    """The right to drive one run. Every write of the driver is fenced on (owner, epoch): once
    another replica acquires the lease (epoch + 1), the old driver's writes are refused."""

    tenant: str
    run_id: str
    owner: str
    epoch: int
    expires_at: float


@dataclass(frozen=True)
class RunUpdate:
    """What one write changes in a run (`RunStore.update_run`, `RunStore.reopen`); a field left None
    stays as it is. A new `plan` given with its `round` is also kept in the run's plan history."""

    status: RunStatus | None = None
    plan: Plan | None = None
    round: int | None = None
    replans: int | None = None
    error: dict[str, Any] | None = None
    approval: dict[str, Any] | None = None
    escalation: dict[str, Any] | None = None
    budget_round: int | None = None
    action: dict[str, Any] | None = None


@dataclass(frozen=True)
class TenantQuota:
    """Per-tenant caps, checked atomically with the write they guard: creating a run (all three),
    putting a cache entry (stored bytes), moving a run back to `running` (active runs)."""

    max_active_runs: int
    max_stored_runs: int
    max_stored_bytes: int
    outside_bytes: int = 0
    """What the tenant keeps outside this store (the gateway's demonstrations and cached catalogs),
    counted with its stored bytes."""


@dataclass(frozen=True)
class TenantUsage:
    active_runs: int
    stored_runs: int
    stored_bytes: int
    """Everything the tenant keeps in the store: its runs (plans, request, results, events) and its
    live cache entries (plan records)."""
    cache_bytes: int = 0
    """The live cache entries' part of `stored_bytes`."""


@dataclass(frozen=True)
class PurgeReport:
    runs_deleted: int
    bytes_freed: int
    cache_entries_deleted: int
    total_bytes_after: int

    def as_dict(self) -> dict[str, int]:
        return {
            "runs_deleted": self.runs_deleted,
            "bytes_freed": self.bytes_freed,
            "cache_entries_deleted": self.cache_entries_deleted,
            "total_bytes_after": self.total_bytes_after,
        }


@dataclass(frozen=True)
class WatchState:
    """What a follower's wake-up depends on: the last event and whether a driver is alive."""

    last_seq: int
    driven: bool
    status: str


def dumps(value: Any) -> str | None:
    """Compact JSON text for a stored column (None stays NULL)."""
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))

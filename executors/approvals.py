"""Approvals: a person's consent before a run does something it must not do alone.

Two things make a run wait for a person:

- a tool registered with `@registry.tool(approval="required")` (or named in `approvals.tools`): the
  node is resolved (its upstream outputs are in its arguments) and then held; the rest of the plan
  goes on as far as it can without it;
- a tenant listed in `approvals.plan_tenants`: every plan of its runs (the first one and each
  re-plan) is approved as a whole before anything of it executes.

The run then pauses in `awaiting_approval`, durably: the request (kind, round, the held calls with
their resolved arguments, when it expires) is in the run's record, the run holds no lease, and
nothing but a decision (`RunStore.reopen`) moves it on, so neither a gateway restart nor the
takeover sweep runs it. A decision (`approved`, `rejected` with a reason, or `expired` after
`approvals.timeout_s`) is recorded with who made it (the API key's tenant and id, and a
caller-supplied name) and when; the run's next driver acts on it: an approved call executes
(once), a rejected one never does, and the run either stops (`approval_rejected` /
`approval_expired`) or, when the decision asks for it, re-plans with the reason in the failure
summary.

This module is the state and its transitions only (no store, no clock of its own); the people's
actions on it — decide, expire — are `executors.operator_actions`, the driver's side is
`executors.driver`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from executors.errors import ExecutorError, structured_error
from executors.stores import RunRecord

if TYPE_CHECKING:
    from executors.registry import ToolSpec

Verdict = Literal["approved", "rejected", "expired"]
MAX_DECISIONS = 200  # decisions kept per run (oldest dropped first)
MAX_REASON_CHARS = 1000
_NAME_DROP = re.compile(r"[^\w .@+-]+")


class ApprovalsConfig(BaseModel):
    """Settings section `approvals`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(
        default=3600.0, gt=0, le=30 * 86_400, description="A request not decided within this time expires."
    )
    plan_tenants: list[str] = Field(
        default_factory=list,
        description="Tenants whose every plan (first and re-planned) needs approval before it executes; '*' = all.",
    )
    tools: list[str] = Field(
        default_factory=list, description="Tools that need approval besides those registered approval='required'."
    )
    expiry_sweep_s: float = Field(default=5.0, gt=0, le=3600, description="How often expired requests are closed.")
    max_name_chars: int = Field(default=64, ge=1, le=256, description="Longest decider name kept (sanitised).")

    def plan_needed(self, tenant: str) -> bool:
        return "*" in self.plan_tenants or tenant in self.plan_tenants


class HeldCall(BaseModel):
    """A tool call held for approval: what it is about to do."""

    model_config = ConfigDict(extra="forbid")

    node_id: str
    tool: str
    args: dict[str, JsonValue] = Field(description="Arguments with every reference resolved.")
    input_hash: str


class ApprovalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["plan", "tool"]
    round: int
    calls: list[HeldCall] = Field(default_factory=list, description="Held calls (kind `tool`).")
    requested_at: float
    expires_at: float

    def decision(
        self, verdict: Verdict, *, by: Decider | None, reason: str | None, replan: bool, now: float
    ) -> ApprovalDecision:
        """The decision recorded for `verdict` at `now`. One that arrives after the request expired is
        recorded as the expiry (no decider, no re-plan); `late_decision` tells the two apart."""
        late = late_decision(self, verdict, now)
        return ApprovalDecision(
            verdict="expired" if late else verdict,
            kind=self.kind,
            round=self.round,
            calls={call.node_id: call.input_hash for call in self.calls},
            by=None if late or verdict == "expired" else by,
            at=now,
            waited_s=round(max(now - self.requested_at, 0.0), 3),
            reason=None if reason is None else reason[:MAX_REASON_CHARS],
            replan=replan and verdict == "rejected" and not late,
        )


def late_decision(request: ApprovalRequest, verdict: Verdict, now: float) -> bool:
    """A person's verdict that arrives once the request has expired."""
    return verdict != "expired" and now >= request.expires_at


class Decider(BaseModel):
    """Who decided: the API key's tenant and id (`key_…`, never the key itself) and the name they gave."""

    model_config = ConfigDict(extra="forbid")

    tenant: str
    name: str
    key_id: str | None = Field(default=None, description="The deciding API key's id (not the key); None: unknown.")


class ApprovalDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    kind: Literal["plan", "tool"]
    round: int
    calls: dict[str, str] = Field(default_factory=dict, description="node id → input hash decided on.")
    by: Decider | None = Field(default=None, description="None when the request expired.")
    at: float
    waited_s: float
    reason: str | None = None
    replan: bool = Field(default=False, description="After a rejection: re-plan with the reason instead of stopping.")


class ApprovalState(BaseModel):
    """What a run's record keeps (`RunRecord.approval`)."""

    model_config = ConfigDict(extra="forbid")

    pending: ApprovalRequest | None = None
    decisions: list[ApprovalDecision] = Field(default_factory=list)

    @classmethod
    def of(cls, record: RunRecord) -> ApprovalState:
        return cls() if record.approval is None else cls.model_validate(record.approval)

    def plan_approved(self, round_: int) -> bool:
        return any(d.kind == "plan" and d.round == round_ and d.verdict == "approved" for d in self.decisions)

    def approved_calls(self, round_: int) -> dict[str, str]:
        approved: dict[str, str] = {}
        for decision in self.decisions:
            if decision.kind == "tool" and decision.round == round_ and decision.verdict == "approved":
                approved.update(decision.calls)
        return approved

    def refusal(self, round_: int) -> ApprovalDecision | None:
        """The last decision of this round when it refused (rejected or expired): the driver acts on it."""
        mine = [d for d in self.decisions if d.round == round_]
        return mine[-1] if mine and mine[-1].verdict != "approved" else None

    def with_pending(self, request: ApprovalRequest) -> dict[str, Any]:
        return self.model_copy(update={"pending": request}).model_dump(mode="json")

    def decided(self, decision: ApprovalDecision) -> dict[str, Any]:
        decisions = [*self.decisions, decision][-MAX_DECISIONS:]
        return ApprovalState(pending=None, decisions=decisions).model_dump(mode="json")


@dataclass(frozen=True)
class CallGate:
    """The scheduler's question for each ready node: may it call its tool now?"""

    required_tools: frozenset[str]
    approved: Mapping[str, str]  # node id → the input hash a person approved

    def holds(self, spec: ToolSpec, node_id: str, input_hash: str) -> bool:
        if spec.approval != "required" and spec.name not in self.required_tools:
            return False
        return self.approved.get(node_id) != input_hash


def call_gate(config: ApprovalsConfig, state: ApprovalState, round_: int) -> CallGate:
    return CallGate(frozenset(config.tools), state.approved_calls(round_))


def request_for(
    config: ApprovalsConfig, kind: Literal["plan", "tool"], round_: int, calls: Iterable[HeldCall] = (), *, now: float
) -> ApprovalRequest:
    return ApprovalRequest(
        kind=kind, round=round_, calls=list(calls), requested_at=now, expires_at=now + config.timeout_s
    )


def sanitize_name(name: str | None, max_chars: int) -> str:
    """A decider's name as it is recorded and shown: letters, digits, space and `.@+-_` only, bounded."""
    cleaned = " ".join(_NAME_DROP.sub(" ", name or "").split())[:max_chars].strip()
    return cleaned or "unnamed"


def refusal_error(decision: ApprovalDecision) -> dict[str, Any]:
    """The run's structured error after a refusal."""
    if decision.verdict == "expired":
        return structured_error("the approval request expired before anyone decided", "approval_expired")
    who = "unknown" if decision.by is None else f"{decision.by.name} ({decision.by.tenant})"
    reason = f": {decision.reason}" if decision.reason else ""
    return structured_error(f"{decision.kind} rejected by {who}{reason}", "approval_rejected")


def refusal_summary(decision: ApprovalDecision) -> str:
    """What the re-planner is told about a rejection (bounded; the reason is the operator's own text)."""
    what = "the whole plan" if decision.kind == "plan" else "the calls of " + ", ".join(sorted(decision.calls))
    return f"An operator rejected {what} in round {decision.round}. Reason: {decision.reason or 'none given'}"[:2000]


class NotAwaitingApproval(ExecutorError):
    """The run does not wait for a decision (never did, or someone decided first)."""

    kind = "not_awaiting_approval"
    status = 409
    type = "invalid_request_error"


class ApprovalExpired(ExecutorError):
    """The request expired before this decision arrived; the run was stopped as expired."""

    kind = "approval_expired"
    status = 409
    type = "invalid_request_error"

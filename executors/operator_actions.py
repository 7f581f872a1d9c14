"""What people do to runs: decide on an approval request, expire overdue requests, resume, re-plan
or close an escalation.

Each action reads the run, applies a transition of `executors.approvals` / `executors.escalations`,
and hands the run back to a driver through `RunReopener.reopen` (the store's atomic `reopen` under
this process's lease, then a drive whose first event announces the decision): exactly one of
several concurrent actions wins, the others get `NotAwaitingApproval` / `NotEscalated`. The actions
need only the narrow `OperatorRecords` of the store and a `RunReopener`; `RunService` is both the
reopener and the facade that exposes them (`decide`, `reopen_escalation`, ...).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

from contract.plan import Plan
from executors.approvals import (
    ApprovalDecision,
    ApprovalExpired,
    ApprovalState,
    Decider,
    NotAwaitingApproval,
    Verdict,
    late_decision,
)
from executors.driver import Announcement
from executors.errors import RunNotFound
from executors.escalations import Escalation, NotEscalated
from executors.steering import Steering
from executors.stores import ReopenFrom, RunRecord, RunUpdate


class OperatorRecords(Protocol):
    """What the actions read and change in the store directly."""

    async def get_run(self, tenant: str, run_id: str) -> RunRecord | None: ...

    async def awaiting_runs(self, *, limit: int = 100) -> list[RunRecord]: ...

    async def close_escalation(self, tenant: str, run_id: str, escalation: dict[str, Any]) -> bool: ...


class RunReopener(Protocol):
    async def reopen(
        self,
        tenant: str,
        run_id: str,
        expect: ReopenFrom,
        announce: Announcement,
        update: RunUpdate,
        *,
        executes: bool = True,
    ) -> bool:
        """Move the run out of `expect` with `update` and drive it, announcing why; False when someone
        else was first. A run that `executes` again (rather than only recording why it stops) must fit
        the tenant's active-runs cap (`TooManyActiveRuns`, nothing changed)."""
        ...


class OperatorActions:
    def __init__(
        self,
        records: OperatorRecords,
        reopener: RunReopener,
        steering: Steering,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._records = records
        self._reopener = reopener
        self._steering = steering
        self._clock = clock

    async def _run(self, tenant: str, run_id: str) -> RunRecord:
        record = await self._records.get_run(tenant, run_id)
        if record is None:
            raise RunNotFound(f"run {run_id!r} not found")
        return record

    # -- approvals -------------------------------------------------------------------------------

    async def decide(
        self,
        tenant: str,
        run_id: str,
        verdict: Verdict,
        *,
        by: Decider | None,
        reason: str | None = None,
        replan: bool = False,
    ) -> ApprovalDecision:
        """Record a decision on the run's pending request and hand the run to a driver in this process,
        which acts on it. Exactly one decision wins (`NotAwaitingApproval` for the others); an approval
        that arrives after the request expired is recorded as the expiry (`ApprovalExpired`). A decision
        that makes the run execute again (an approval, a rejection with a re-plan) is refused while the
        tenant has its cap of runs executing (`TooManyActiveRuns`: nothing recorded, the run still waits)."""
        record = await self._run(tenant, run_id)
        state = ApprovalState.of(record)
        pending = state.pending
        if record.status != "awaiting_approval" or pending is None:
            raise NotAwaitingApproval(f"run {run_id!r} is not awaiting approval (it is {record.effective_status})")
        now = self._clock()
        decision = pending.decision(verdict, by=by, reason=reason, replan=replan, now=now)
        announce: Announcement = ("approval_decided", decision.model_dump(mode="json"))
        update = RunUpdate(approval=state.decided(decision))
        # approved, or rejected with a re-plan: the run executes again; a refusal only stops it
        executes = decision.verdict == "approved" or decision.replan
        if not await self._reopener.reopen(tenant, run_id, "awaiting_approval", announce, update, executes=executes):
            raise NotAwaitingApproval(f"run {run_id!r} is no longer awaiting approval: someone decided first")
        self._steering.observer.approval_decided(tenant, decision.verdict, decision.waited_s)
        if late_decision(pending, verdict, now):
            raise ApprovalExpired(f"the approval request of run {run_id!r} expired before this decision")
        return decision

    async def expire_overdue(self) -> list[str]:
        """Close every request past its expiry (the upkeep sweep); returns the run ids expired here."""
        now = self._clock()
        expired: list[str] = []
        for record in await self._records.awaiting_runs():
            pending = ApprovalState.of(record).pending
            if pending is None or pending.expires_at > now:
                continue
            try:
                await self.decide(record.tenant, record.run_id, "expired", by=None)
            except (NotAwaitingApproval, RunNotFound):
                continue  # decided meanwhile (here or on another replica), or purged
            expired.append(record.run_id)
        return expired

    # -- escalations -----------------------------------------------------------------------------

    async def reopen_escalation(
        self, tenant: str, run_id: str, action: Literal["resume", "replan"], by: Decider, plan: Plan | None
    ) -> int:
        """Run an escalated run again as a new round (its plan, or `plan`); returns that round. Exactly
        one operator wins (`NotEscalated` for the others); refused while the tenant has its cap of runs
        executing (`TooManyActiveRuns`: the escalation stays open)."""
        record = await self._run(tenant, run_id)
        escalation = Escalation.of(record)
        if record.status != "failed" or escalation is None or not escalation.is_open:
            raise NotEscalated(f"run {run_id!r} has no open escalation")
        now = self._clock()
        new_round = record.round + 1
        # The operator chose this plan: it counts as approved as a whole (tool approvals still apply).
        consent = ApprovalDecision(
            verdict="approved", kind="plan", round=new_round, by=by, at=now, waited_s=0.0, reason=action
        )
        handled = escalation.handled(action, by, None, now=now).as_record()
        update = RunUpdate(
            approval=ApprovalState.of(record).decided(consent),
            escalation=handled,
            plan=plan or record.plan,
            round=new_round,
            replans=0,
            budget_round=new_round,
        )
        announce: Announcement = ("escalation_reopened", {**handled, "round": new_round})
        if not await self._reopener.reopen(tenant, run_id, "escalated", announce, update):
            raise NotEscalated(f"run {run_id!r} has no open escalation any more: someone handled it first")
        self._steering.observer.escalation_handled(tenant, action)
        return new_round

    async def close_escalation(self, tenant: str, run_id: str, by: Decider, note: str | None) -> dict[str, Any]:
        """Close the run's open escalation with a note; returns the escalation as recorded."""
        record = await self._run(tenant, run_id)
        escalation = Escalation.of(record)
        if escalation is None or not escalation.is_open:
            raise NotEscalated(f"run {run_id!r} has no open escalation")
        limit = self._steering.escalations.max_note_chars
        closed = escalation.handled("close", by, None if note is None else note[:limit], now=self._clock())
        state = closed.as_record()
        if not await self._records.close_escalation(tenant, run_id, state):
            raise NotEscalated(f"run {run_id!r} has no open escalation")
        self._steering.observer.escalation_handled(tenant, "close")
        return state

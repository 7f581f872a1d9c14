"""Approvals and escalations as pure state: each transition from a given state and time, no store."""

from __future__ import annotations

from exec_helpers import plan_of

from executors.approvals import MAX_REASON_CHARS, ApprovalRequest, ApprovalState, Decider, HeldCall, late_decision
from executors.escalations import Escalation, EscalationsConfig
from executors.stores import RunRecord

ALICE = Decider(tenant="alice", name="Alice")
REQUEST = ApprovalRequest(
    kind="tool",
    round=2,
    calls=[HeldCall(node_id="n2", tool="book", args={"value": 7}, input_hash="h2")],
    requested_at=100.0,
    expires_at=160.0,
)


def test_a_decision_in_time_keeps_who_decided_and_what() -> None:
    decision = REQUEST.decision("rejected", by=ALICE, reason="x" * 5000, replan=True, now=130.0)
    assert (decision.verdict, decision.by, decision.replan) == ("rejected", ALICE, True)
    assert decision.calls == {"n2": "h2"} and decision.round == 2 and decision.waited_s == 30.0
    assert decision.reason is not None and len(decision.reason) == MAX_REASON_CHARS
    assert REQUEST.decision("approved", by=ALICE, reason=None, replan=True, now=130.0).replan is False


def test_a_late_decision_is_recorded_as_the_expiry() -> None:
    decision = REQUEST.decision("approved", by=ALICE, reason="ok", replan=False, now=160.0)
    assert (decision.verdict, decision.by, decision.replan) == ("expired", None, False)
    assert late_decision(REQUEST, "approved", 160.0) and not late_decision(REQUEST, "expired", 999.0)


def test_the_approval_state_moves_from_pending_to_decided() -> None:
    pending = ApprovalState.model_validate(ApprovalState().with_pending(REQUEST))
    assert pending.pending == REQUEST and pending.decisions == []
    decision = REQUEST.decision("approved", by=ALICE, reason=None, replan=False, now=120.0)
    decided = ApprovalState.model_validate(pending.decided(decision))
    assert decided.pending is None and decided.approved_calls(2) == {"n2": "h2"} and decided.refusal(2) is None


def test_an_escalation_opens_only_for_the_configured_kinds_and_records_only_what_was_set() -> None:
    config = EscalationsConfig(on=["step_cap"])
    assert Escalation.opened(config, {"error": "no", "type": "approval_rejected"}, now=1.0) is None
    opened = Escalation.opened(config, {"error": "cap hit", "type": "step_cap"}, now=5.0)
    assert opened is not None and opened.is_open
    assert opened.as_record() == {"state": "open", "reason": "step_cap", "opened_at": 5.0, "error": "cap hit"}
    closed = opened.handled("close", ALICE, None, now=9.0)
    assert not closed.is_open
    assert closed.as_record() == {
        "state": "closed",
        "reason": "step_cap",
        "opened_at": 5.0,
        "error": "cap hit",
        "handled_by": {"tenant": "alice", "name": "Alice"},
        "handled_at": 9.0,
        "note": None,
    }
    record = RunRecord(run_id="r", tenant="alice", request="x", plan=plan_of(), escalation=closed.as_record())
    assert Escalation.of(record) == closed and Escalation.of(record.model_copy(update={"escalation": None})) is None

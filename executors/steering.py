"""What a `RunService` needs to put people in the loop: approvals, escalations, webhooks, metrics.

    steering = Steering(approvals=ApprovalsConfig(plan_tenants=["acme"]), notifier=WebhookNotifier(...))
    RunService(store, scheduler, steering=steering)

Without one, runs behave as before: no tool waits for anyone (except tools registered
`approval="required"`, which then wait with the default timeout), nothing is notified.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from executors.approvals import ApprovalsConfig
from executors.escalations import EscalationsConfig

if TYPE_CHECKING:
    from executors.webhooks import WebhookNotifier


class SteeringObserver(Protocol):
    """Counters of what people decided and what was pushed to them, and of how runs end (the gateway's
    metrics)."""

    def approval_decided(self, tenant: str, verdict: str, waited_s: float) -> None: ...

    def escalated(self, tenant: str, reason: str) -> None: ...

    def escalation_handled(self, tenant: str, action: str) -> None: ...

    def webhook_delivery(self, outcome: str) -> None: ...

    def run_finished(self, status: str) -> None: ...

    def replanned(self) -> None: ...

    def runs_waiting(self, counts: dict[str, int]) -> None:
        """How many runs of every tenant wait for a person or for their caller now (from the store)."""
        ...


class NullSteeringObserver:
    def approval_decided(self, tenant: str, verdict: str, waited_s: float) -> None:
        return None

    def escalated(self, tenant: str, reason: str) -> None:
        return None

    def escalation_handled(self, tenant: str, action: str) -> None:
        return None

    def webhook_delivery(self, outcome: str) -> None:
        return None

    def run_finished(self, status: str) -> None:
        return None

    def replanned(self) -> None:
        return None

    def runs_waiting(self, counts: dict[str, int]) -> None:
        return None


@dataclass
class Steering:
    approvals: ApprovalsConfig = field(default_factory=ApprovalsConfig)
    escalations: EscalationsConfig = field(default_factory=EscalationsConfig)
    notifier: WebhookNotifier | None = None
    observer: SteeringObserver = field(default_factory=NullSteeringObserver)

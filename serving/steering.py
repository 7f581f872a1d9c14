"""Approvals and escalations behind the gateway: request bodies and the tenant's decider.

`SteeringGateway` serves `POST /v1/runs/{id}/approve|reject` and `/v1/escalations`. Everything is
tenant-scoped (another tenant's run is a 404 like an unknown id); the decider is the API key's
tenant and id (`key_…`, never the key) plus the caller's `name`, sanitised and bounded before it is
recorded. Deciding on a held run needs a key with the `approver` scope (403
`approver_key_required` otherwise: the key an application runs with cannot consent to its own
calls); so does resuming or re-planning an escalation of a tenant whose plans need approval, since
that counts as approving the plan. The executors' errors (`NotAwaitingApproval`, `ApprovalExpired`,
`NotEscalated`, `RunBusy`, `TooManyActiveRuns`, ...) reach the error funnel as they are raised: each
declares its status (409, 404, 429, ...).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contract.plan import Plan
from executors.approvals import Decider, sanitize_name
from executors.runs import RunService, RunView
from executors.steering import Steering
from executors.stores import RunStore
from executors.webhooks import WebhookNotifier
from serving.auth import Principal
from serving.errors import InvalidRequestError, NotFoundError, PermissionDeniedError
from serving.isolation import webhook_signing_key
from serving.metrics import GatewayMetrics
from serving.plans.service import PlanningGateway
from serving.settings import Settings


def steering_of(settings: Settings, store: RunStore, secret: bytes, metrics: GatewayMetrics) -> Steering:
    """People in the loop, from settings: approvals, escalations, webhooks signed with each tenant's own key
    (derived from `secret`); counted in /metrics."""
    def key(tenant: str) -> bytes:
        return webhook_signing_key(secret, tenant)

    notifier = WebhookNotifier(store, settings.webhooks, key, on_outcome=metrics.webhook_delivery)
    return Steering(approvals=settings.approvals, escalations=settings.escalations, notifier=notifier, observer=metrics)


class DecisionCreate(BaseModel):
    """POST /v1/runs/{id}/approve and /reject."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("", max_length=200, description="Who decides (recorded with the API key's tenant).")
    reason: str | None = Field(None, max_length=1000, description="Why (a rejection's reason may feed a re-plan).")
    replan: bool = Field(False, description="Reject only: re-plan with the reason instead of stopping the run.")


class EscalationAction(BaseModel):
    """POST /v1/escalations/{id}/resume, /replan (with `plan`) and /close (with `note`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("", max_length=200, description="Who handles it (recorded with the API key's tenant).")
    plan: Plan | None = Field(None, description="Re-plan: the edited plan (validated like any client plan).")
    note: str | None = Field(None, max_length=2000, description="Close: why.")


class SteeringGateway:
    def __init__(self, runs: RunService, planning: PlanningGateway) -> None:
        self.runs = runs
        self._planning = planning
        self._max_name = runs.steering.approvals.max_name_chars

    def decider(self, who: Principal, name: str) -> Decider:
        return Decider(tenant=who.tenant, name=sanitize_name(name, self._max_name), key_id=who.key_id)

    @staticmethod
    def require_approver(who: Principal, what: str) -> None:
        if not who.approver:
            raise PermissionDeniedError(
                f"this API key may not {what}: that needs a key with the approver scope",
                hint="the people who approve get their own keys, `key=tenant:approver` in PLANSTACK_API_KEYS",
                code="approver_key_required",
            )

    async def decide(
        self, who: Principal, run_id: str, verdict: Literal["approved", "rejected"], body: DecisionCreate
    ) -> dict[str, Any]:
        self.require_approver(who, "approve or reject a run")
        decision = await self.runs.decide(
            who.tenant, run_id, verdict, by=self.decider(who, body.name), reason=body.reason, replan=body.replan
        )
        return {"run_id": run_id, "decision": decision.model_dump(mode="json")}

    async def queue(self, who: Principal, *, limit: int, after: str | None) -> dict[str, Any]:
        """The tenant's open escalations, newest first, paged."""
        page = await self.runs.store.list_runs(who.tenant, limit=limit + 1, escalation="open", before=after)
        items = [
            {
                "run_id": record.run_id,
                "request": record.request,
                "status": record.status,
                "round": record.round,
                "error": record.error,
                "escalation": record.escalation,
                "created_at": record.created_at,
                "updated_at": record.updated_at,
            }
            for record in page[:limit]
        ]
        return {"object": "list", "data": items, "next_after": page[limit - 1].run_id if len(page) > limit else None}

    async def reopen(
        self, who: Principal, run_id: str, action: Literal["resume", "replan"], body: EscalationAction
    ) -> RunView:
        if self.runs.steering.approvals.plan_needed(who.tenant):  # running it again approves its plan
            self.require_approver(who, f"{action} an escalation of a tenant whose plans need approval")
        if action == "replan":
            if body.plan is None:
                raise InvalidRequestError("re-planning an escalation needs the edited `plan`", param="plan")
            await self._planning.check_plan(body.plan, who, await self._run_catalog(who, run_id))
        await self.runs.reopen_escalation(who.tenant, run_id, action, self.decider(who, body.name), body.plan)
        view = await self.runs.get(who.tenant, run_id)
        if view is None:  # purged meanwhile
            raise NotFoundError(f"run {run_id!r} not found", code="run_not_found")
        return view

    async def _run_catalog(self, who: Principal, run_id: str) -> list[dict[str, Any]] | None:
        """The catalog of a run that has its own tools (toolsets, the caller's tools): an edited plan is
        checked over what the run executes with; None for a run over the built-in catalog."""
        record = await self.runs.store.get_run(who.tenant, run_id)
        run_tools = self._planning.run_tools
        if record is None or not record.tools or run_tools is None:
            return None
        return run_tools.catalog_for(record)

    async def close(self, who: Principal, run_id: str, body: EscalationAction) -> dict[str, Any]:
        state = await self.runs.close_escalation(who.tenant, run_id, self.decider(who, body.name), body.note)
        return {"run_id": run_id, "escalation": state}

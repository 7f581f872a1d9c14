"""`RunGateway`: a tenant's runs: create (plan, or check a given plan, then execute), read, page, resume
and follow. What a run keeps of how its plan was made is bounded here (`planner_record`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from contract.plan import Plan
from executors.runs import RunService, RunView
from executors.stores import EscalationState, RunEvent, RunRecord, RunStatus
from executors.webhooks import WebhooksConfig, check_webhook_url
from planner.service import PlanResult
from serving.auth import Principal
from serving.errors import InvalidRequestError, NotFoundError
from serving.followers import FollowerSlot, FollowerSlots
from serving.plans.service import PlanningGateway
from serving.runs.protocol import RunCreate, RunListStatus
from serving.toolsets.run_tools import ResolvedTools


def planner_record(result: PlanResult, model: str | None) -> dict[str, Any]:
    """What a run keeps of how its plan was made: the path and each attempt, bounded (no raw output)."""
    attempts = [
        {key: value for key, value in attempt.as_dict().items() if key != "raw_text"} | {"chars": len(attempt.raw_text)}
        for attempt in result.attempts[:8]
    ]
    return {
        "path": result.path,
        "model": model,
        "fallback_reason": None if result.fallback_reason is None else result.fallback_reason[:500],
        "attempts": attempts,
        "timings": result.timings,
        "usage": result.usage,
    }


class RunGateway:
    def __init__(
        self,
        runs: RunService,
        planning: PlanningGateway,
        followers: FollowerSlots | None = None,
        webhooks: WebhooksConfig | None = None,
    ) -> None:
        self.runs = runs
        self._planning = planning
        self._webhooks = webhooks or WebhooksConfig()
        config = runs.runs_config
        self.followers = followers or FollowerSlots(
            per_tenant=config.max_followers_per_tenant, total=config.max_followers_total
        )

    async def create(self, body: RunCreate, who: Principal, session: str | None) -> tuple[RunView, dict[str, Any]]:
        planned: dict[str, Any] = {"path": "given"}
        webhook = None if body.webhook_url is None else check_webhook_url(body.webhook_url, self._webhooks)
        recorded: dict[str, Any] = planned
        plan: Plan | None = body.plan
        own = await self._own_tools(body, who)
        catalog = None if own is None else own.catalog
        if body.plan is None:
            result = await self._planning.plan(body.request, who, session, catalog)
            plan = result.plan
            planned = {
                "plan_id": result.plan_id,
                "path": result.path,
                "fallback_reason": result.fallback_reason,
                "reason": result.reason,
            }
            recorded = planner_record(result, getattr(self._planning.planner.llm, "model", None))
        else:
            await self._planning.check_plan(body.plan, who, catalog)
        if plan is None:  # no tool fits: the run ends at once as `no_plan`, with the reason
            reason = planned.get("reason") or "no plan"
            run_id = await self.runs.record_no_plan(who.tenant, body.request, reason, planner=recorded)
            return await self.get(who, run_id), planned
        tools = None if own is None else own.recorded()
        run_id = await self.runs.start(
            who.tenant, body.request, plan, webhook_url=webhook, planner=recorded, tools=tools
        )
        view = await self.runs.wait(who.tenant, run_id) if body.wait else await self.get(who, run_id)
        return view, planned

    async def _own_tools(self, body: RunCreate, who: Principal) -> ResolvedTools | None:
        """The run's own tools when it names toolsets or brings tools; None for the built-in catalog."""
        if body.toolsets is None and body.tools is None:
            return None
        run_tools = self._planning.run_tools
        if run_tools is None:
            raise InvalidRequestError("toolsets are not available in this gateway", param="toolsets")
        return await run_tools.resolve(who.tenant, body.toolsets, body.tools)

    async def get(self, who: Principal, run_id: str) -> RunView:
        view = await self.runs.get(who.tenant, run_id)
        if view is None:  # another tenant's run does not exist for this one
            raise NotFoundError(f"run {run_id!r} not found", code="run_not_found")
        return view

    async def page(
        self, who: Principal, *, status: RunListStatus | None, limit: int, after: str | None
    ) -> tuple[list[RunRecord], str | None]:
        """The tenant's runs, newest first; `escalated` = failed with an open escalation. The cursor of
        the next page is the last run id of this one (None at the end)."""
        escalation: EscalationState | None = "open" if status == "escalated" else None
        stored: RunStatus | None = None if status is None or status == "escalated" else status
        page = await self.runs.store.list_runs(
            who.tenant, limit=limit + 1, status=stored, escalation=escalation, before=after
        )
        return page[:limit], page[limit - 1].run_id if len(page) > limit else None

    async def plans(self, who: Principal, run_id: str) -> list[tuple[int, Plan]]:
        return await self.runs.store.plans(who.tenant, run_id)

    async def resume(self, who: Principal, run_id: str) -> RunView:
        await self.runs.resume(who.tenant, run_id)
        return await self.get(who, run_id)

    async def follow(
        self, who: Principal, run_id: str, *, after: int = 0
    ) -> tuple[FollowerSlot, AsyncIterator[RunEvent]]:
        """A follower slot (429 when the tenant or the gateway has too many) and the run's events;
        404 before anything streams."""
        await self.get(who, run_id)
        slot = self.followers.acquire(who.tenant)
        return slot, self.runs.events(who.tenant, run_id, after=after)

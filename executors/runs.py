"""`RunService`: start, follow, inspect and resume durable plan runs — the executors' facade.

A run is a request, a plan and a tenant. It executes in a background task, round by round
(`executors.driver`: re-plans, reuse of earlier results, events, pauses, escalations). Every node
result is committed to the `RunStore` before its dependants are dispatched, and every step is an
event in the run's ordered log, so a run interrupted by a crash is resumed from the store without
redoing finished nodes, and `events()` can replay a run and then follow it live, from any process
on the store.

A run is driven only by the process holding its lease (`executors.leases`): `start` creates the run
leased to this process, `resume` and `take_over` acquire an expired lease (`RunBusy` while another
driver lives), every write is fenced on the lease, and a driver whose lease was taken stops.
Per-tenant quotas and size caps (`executors.quotas`) are checked before anything is written, and the
active-runs cap again whenever a run goes back to executing (a resume, an approval, an escalation
resumed or re-planned).

People stay in the loop (`executors.steering`): a run pauses in `awaiting_approval` where a tool or
the tenant's policy asks for a person's consent (`executors.approvals`), or in `requires_action`
while its caller executes tool calls handed to it (`executors.tool_calls`), and holds no lease while it
waits; a run that ends for good opens an escalation (`executors.escalations`); what people do about
them (decide, expire, resume, re-plan, close) is `executors.operator_actions`, exposed here; chosen
events are POSTed to the run's webhook (`executors.webhooks`) without waiting for the receiver.

The run ends `failed` with a structured explanation (`{"error", "type", "retryable", "failures"}`)
when: no replanner is injected (`node_failed`), the step or time cap is hit (`step_cap`,
`run_timeout`), a tool's circuit breaker is open (`circuit_open`), the re-plan budget is spent
(`replans_exhausted`), a new plan fails exactly as an earlier one did (`repeated_failure`, the
run-level breaker), or the replanner itself fails (`replan_failed`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from contract.plan import Plan
from executors.approvals import ApprovalDecision, Decider, Verdict
from executors.driver import Announcement, DriveContext, Replanner, RunDriver, RunHook, RunTools
from executors.errors import RunNotFound, structured_error
from executors.leases import default_replica_id
from executors.observation import NodeResult
from executors.operator_actions import OperatorActions
from executors.quotas import check_plan_size, tenant_quota
from executors.scheduler import DagScheduler
from executors.steering import Steering
from executors.stores import (
    Lease,
    ReopenFrom,
    RunEvent,
    RunRecord,
    RunStatus,
    RunStore,
    RunUpdate,
    TenantQuota,
    ToolAnswer,
    WebhookDelivery,
)
from executors.tool_calls import ToolCallActions

__all__ = ["Announcement", "Replanner", "RunHook", "RunService", "RunTools", "RunView"]

logger = logging.getLogger("planstack.executors.runs")
OutsideBytes = Callable[[str], Awaitable[int]]
"""What a tenant keeps outside the run store, in bytes (counted with its stored bytes)."""
_INTERNAL_FIELDS = {"status", "plan", "lease_owner", "lease_expires_at", "driven", "budget_round"}


class RunView(BaseModel):
    """A run as the API shows it: its record plus every node result (all rounds)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    tenant: str
    request: str
    status: RunStatus
    round: int
    replans: int
    plan: Plan
    error: dict[str, Any] | None
    created_at: float
    updated_at: float
    nodes: list[NodeResult]
    approval: dict[str, Any] | None = None
    escalation: dict[str, Any] | None = None
    webhook_url: str | None = None
    deliveries: list[WebhookDelivery] = []
    planner: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None
    action: dict[str, Any] | None = None

    def current_nodes(self) -> list[NodeResult]:
        return [node for node in self.nodes if node.round == self.round]


class RunService:
    """Drives runs in background tasks; state (and the lease of each run) lives in the store, not here.

    Several processes may share one store: each run is driven by the one holding its lease; the
    others answer for it from the store and follow its events."""

    def __init__(
        self,
        store: RunStore,
        scheduler: DagScheduler,
        *,
        replanner: Replanner | None = None,
        new_id: Callable[[], str] | None = None,
        replica_id: str | None = None,
        steering: Steering | None = None,
        on_succeeded: RunHook | None = None,
        outside_bytes: OutsideBytes | None = None,
        tools: RunTools | None = None,
    ) -> None:
        """`outside_bytes(tenant)`: what the tenant keeps outside the run store (the gateway's
        demonstrations and cached catalogs), counted with its stored bytes when a run is created."""
        self.store = store
        self._outside_bytes = outside_bytes
        self.tools = tools
        self.steering = steering or Steering()
        self.on_succeeded = on_succeeded
        self.scheduler = scheduler
        self.config = scheduler.config
        self.runs_config = store.config
        self.replanner = replanner
        self.replica_id = replica_id or self.runs_config.replica_id or default_replica_id()
        self.operator = OperatorActions(store, self, self.steering)
        self.tool_calls = ToolCallActions(
            store, self._answered, owner=lambda: self.replica_id, ttl_s=self.runs_config.lease_ttl_s
        )
        self._new_id = new_id or (lambda: "run_" + uuid.uuid4().hex[:20])
        self._live: dict[str, RunDriver] = {}

    # -- public API ------------------------------------------------------------------------------

    async def start(
        self,
        tenant: str,
        request: str,
        plan: Plan,
        *,
        webhook_url: str | None = None,
        planner: dict[str, Any] | None = None,
        tools: dict[str, Any] | None = None,
    ) -> str:
        """Record a new run (leased to this process) and execute it in the background; returns its id
        at once. Over a cap: `PlanTooLarge` or a `QuotaExceeded` subclass, nothing written. The
        caller has checked `webhook_url` (`executors.webhooks.check_webhook_url`). `tools`: the run's
        own tool definitions (what `RunTools` executes it with), None for the built-in catalog."""
        check_plan_size(plan, self.runs_config)
        run_id = self._new_id()
        lease = await self.store.create_run(
            RunRecord(
                run_id=run_id,
                tenant=tenant,
                request=request,
                plan=plan,
                webhook_url=webhook_url,
                planner=planner,
                tools=tools,
            ),
            owner=self.replica_id,
            ttl_s=self.runs_config.lease_ttl_s,
            quota=await self.quota(tenant),
        )
        self.launch(lease, resumed=False)
        return run_id

    async def record_no_plan(
        self, tenant: str, request: str, reason: str, *, planner: dict[str, Any] | None = None
    ) -> str:
        """Record a run whose request no tool fits: it ends at once as `no_plan`, with the reason."""
        run_id = self._new_id()
        lease = await self.store.create_run(
            RunRecord(run_id=run_id, tenant=tenant, request=request, plan=Plan(), planner=planner),
            owner=self.replica_id,
            ttl_s=self.runs_config.lease_ttl_s,
            quota=await self.quota(tenant),
        )
        error = structured_error(reason[:500], "no_plan")
        await self.store.append_event(lease, "run_started", round_=0, data={"nodes": 0})
        await self.store.update_run(lease, RunUpdate(status="no_plan", error=error))
        await self.store.append_event(lease, "run_finished", round_=0, data={"status": "no_plan", "error": error})
        await self.store.release_lease(lease)
        return run_id

    async def run(self, tenant: str, request: str, plan: Plan) -> RunView:
        """Start a run and wait for its end."""
        return await self.wait(tenant, await self.start(tenant, request, plan))

    async def resume(self, tenant: str, run_id: str) -> str:
        """Continue an interrupted run (finished nodes are not run again). A finished run is left as it
        is; a run with a live driver (here or in another process) raises `RunBusy`; one more run
        executing past the tenant's cap, `TooManyActiveRuns`."""
        lease = await self.store.acquire_lease(
            tenant,
            run_id,
            owner=self.replica_id,
            ttl_s=self.runs_config.lease_ttl_s,
            quota=tenant_quota(self.runs_config),
        )
        if lease is not None:
            self.launch(lease, resumed=True)
        return run_id

    async def take_over(self, tenant: str, run_id: str) -> bool:
        """Continue a run whose driver died (its lease expired); False when it finished meanwhile."""
        if run_id in self._live:
            return False
        lease = await self.store.acquire_lease(
            tenant, run_id, owner=self.replica_id, ttl_s=self.runs_config.lease_ttl_s, takeover=True
        )
        if lease is None:
            return False
        logger.info("run %s: taken over by %s", run_id, self.replica_id)
        self.launch(lease, resumed=True)
        return True

    async def wait(self, tenant: str, run_id: str) -> RunView:
        driver = self._live.get(run_id)
        if driver is not None and driver.tenant == tenant and driver.task is not None:
            await asyncio.shield(driver.task)
            if driver.store_error is not None:
                raise driver.store_error
            if driver.lost:  # another replica finishes it: wait for that
                async for _ in self.events(tenant, run_id):
                    pass
        view = await self.get(tenant, run_id)
        if view is None:
            raise RunNotFound(f"run {run_id!r} not found")
        return view

    async def get(self, tenant: str, run_id: str) -> RunView | None:
        """The run with its node results; None for an unknown id or another tenant's run. A run
        recorded as running whose lease expired (no live driver anywhere) is reported `interrupted`."""
        record = await self.store.get_run(tenant, run_id)
        if record is None:
            return None
        status = "running" if self._drives(run_id) and record.status == "running" else record.effective_status
        return RunView(
            **record.model_dump(exclude=_INTERNAL_FIELDS),
            plan=record.plan,
            status=status,
            nodes=await self.store.results(tenant, run_id),
            deliveries=await self.store.deliveries(tenant, run_id) if record.webhook_url else [],
        )

    async def quota(self, tenant: str) -> TenantQuota:
        """The tenant's caps, with what it keeps outside the store counted in."""
        outside = 0 if self._outside_bytes is None else await self._outside_bytes(tenant)
        return tenant_quota(self.runs_config, outside_bytes=outside)

    async def list_runs(self, tenant: str, *, limit: int = 50) -> list[RunRecord]:
        return await self.store.list_runs(tenant, limit=limit)

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
        """Move a paused or escalated run back to `running` under this process's lease (`RunStore.reopen`
        with `update`) and drive it, its first event saying why; False when someone else was first. A
        run that `executes` again must fit the tenant's active-runs cap (`TooManyActiveRuns`)."""
        lease = await self.store.reopen(
            tenant,
            run_id,
            owner=self.replica_id,
            ttl_s=self.runs_config.lease_ttl_s,
            expect=expect,
            update=update,
            quota=tenant_quota(self.runs_config) if executes else None,
        )
        if lease is None:
            return False
        self.launch(lease, resumed=True, announce=announce)
        return True

    async def decide(
        self,
        tenant: str,
        run_id: str,
        verdict: Verdict,
        *,
        by: Decider,
        reason: str | None = None,
        replan: bool = False,
    ) -> ApprovalDecision:
        """Approve or reject the run's pending request (see `OperatorActions.decide`)."""
        return await self.operator.decide(tenant, run_id, verdict, by=by, reason=reason, replan=replan)

    async def expire_overdue(self) -> list[str]:
        """Close every approval request past its expiry (see `OperatorActions.expire_overdue`)."""
        return await self.operator.expire_overdue()

    async def reopen_escalation(
        self, tenant: str, run_id: str, action: Literal["resume", "replan"], by: Decider, plan: Plan | None
    ) -> int:
        """Resume an escalated run, or re-plan it with `plan`; returns the new round."""
        return await self.operator.reopen_escalation(tenant, run_id, action, by, plan)

    async def close_escalation(self, tenant: str, run_id: str, by: Decider, note: str | None) -> dict[str, Any]:
        """Close the run's open escalation with a note; returns the escalation as recorded."""
        return await self.operator.close_escalation(tenant, run_id, by, note)

    async def answer_tool_call(
        self, tenant: str, run_id: str, node_id: str, *, output: Any = None, error: str | None = None, by: str | None
    ) -> ToolAnswer:
        """Answer a call the run handed to its caller (see `ToolCallActions.answer`)."""
        return await self.tool_calls.answer(tenant, run_id, node_id, output=output, error=error, by=by)

    async def expire_unanswered(self) -> list[str]:
        """Fail every handed-out call past its expiry (see `ToolCallActions.expire_overdue`)."""
        return await self.tool_calls.expire_overdue()

    async def events(self, tenant: str, run_id: str, *, after: int = 0) -> AsyncIterator[RunEvent]:
        """Stored events of the run after `after`, then live ones until it finishes or its driver
        (in any process) is gone. Waiting costs nothing: the store's feed wakes this follower only
        when this run changes."""
        if await self.store.get_run(tenant, run_id) is None:
            raise RunNotFound(f"run {run_id!r} not found")
        last = after
        with self.store.subscribe(run_id) as changes:
            while True:
                batch = await self.store.events(tenant, run_id, after=last)
                for event in batch:
                    last = event.seq
                    yield event
                    if event.type == "run_finished":
                        return
                if batch:
                    continue
                if not await self._may_change(tenant, run_id):
                    for event in await self.store.events(tenant, run_id, after=last):  # appended meanwhile
                        yield event
                    return
                changes.read_up_to(last)
                await changes.wait()

    async def aclose(self) -> None:
        """Stop driving runs here; their leases are released, so another replica (or a resume) may
        continue them at once. They stay `running` in the store."""
        tasks = [driver.task for driver in self._live.values() if driver.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def launch(self, lease: Lease, *, resumed: bool, announce: Announcement | None = None) -> None:
        """Drive the run whose lease this process just acquired, in a background task."""
        context = DriveContext(
            store=self.store,
            scheduler=self.scheduler,
            steering=self.steering,
            runs_config=self.runs_config,
            replanner=self.replanner,
            on_succeeded=self.on_succeeded,
            tools=self.tools,
        )
        driver = RunDriver(context, lease)
        self._live[lease.run_id] = driver
        driver.start(resumed=resumed, announce=announce, on_done=self._forget)

    # -- plumbing --------------------------------------------------------------------------------

    def _answered(self, lease: Lease, announced: dict[str, Any]) -> None:
        self.launch(lease, resumed=True, announce=("tool_output_received", announced))

    def _forget(self, driver: RunDriver) -> None:
        if self._live.get(driver.run_id) is driver:
            del self._live[driver.run_id]

    def _drives(self, run_id: str) -> bool:
        driver = self._live.get(run_id)
        return driver is not None and not driver.lost

    async def _may_change(self, tenant: str, run_id: str) -> bool:
        """A driver lives, or the run waits for a person or its caller (whose answer wakes the followers). A live
        lease counts whatever the status says: a driver records the final status before it appends
        `run_finished` and releases the lease after, so a follower in another process that saw the
        status alone would end the stream without the run's last event."""
        if self._drives(run_id):
            return True
        record = await self.store.get_run(tenant, run_id)
        if record is None:
            return False
        return record.status in ("awaiting_approval", "requires_action") or record.driven

"""`RunService`: start, follow, inspect and resume durable plan runs.

A run is a request, a plan and a tenant. It executes in a background asyncio task, round by round:
round 0 runs the given plan; when nodes fail for good (no fallback rescued them) and a `Replanner`
is injected, it is asked for a new plan (at most `max_replans` times) and the next round runs it,
reusing every earlier result whose (tool, version, arguments) match. Every node result is committed
to the `RunStore` before its dependants are dispatched, and every step is an event in the run's
ordered log, so a run interrupted by a crash is resumed from the store without redoing finished
nodes, and `events()` can replay a run and then follow it live, from any process on the store.

A run is driven only by the process holding its lease (`executors.leases`): `start` creates the run
leased to this process, `resume` and `take_over` acquire an expired lease (`RunBusy` while another
driver lives), every write is fenced on the lease, and a driver whose lease was taken stops.
Per-tenant quotas and size caps (`executors.quotas`) are checked before anything is written.

People stay in the loop (`executors.steering`): a run pauses in `awaiting_approval` where a tool or
the tenant's policy asks for a person's consent (`executors.approvals`) and holds no lease while it
waits; a run that ends for good opens an escalation (`executors.escalations`); chosen events are
POSTed to the run's webhook (`executors.webhooks`) without waiting for the receiver.

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
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from contract.plan import Plan
from executors import approvals, escalations
from executors.approvals import ApprovalDecision, ApprovalRequest, ApprovalState
from executors.context import set_run_tenant
from executors.errors import RunNotFound, structured_error
from executors.failures import failure_list, failure_summary, stop_reason
from executors.leases import LeaseKeeper, default_replica_id
from executors.observation import NodeResult, observation_for_planner
from executors.quotas import PlanTooLarge, check_plan_size, tenant_quota
from executors.run_observer import RunObserver
from executors.scheduler import DagScheduler, ReuseKey, reuse_key
from executors.steering import Steering
from executors.stores import (
    EventType,
    Lease,
    LeaseLost,
    ReopenFrom,
    RunEvent,
    RunRecord,
    RunStatus,
    RunStore,
    RunStoreError,
    WebhookDelivery,
)

logger = logging.getLogger("planstack.executors.runs")
_INTERNAL_FIELDS = {"status", "plan", "lease_owner", "lease_expires_at", "driven", "budget_round"}
Announcement = tuple[EventType, dict[str, Any]]
"""An event the next driver appends first (a decision that handed it the run)."""
RunHook = Callable[[RunRecord], Awaitable[None]]
"""Called with the finished record of a run that succeeded (e.g. to learn from it); its errors are logged."""


class Replanner(Protocol):
    """Writes a new plan after a failure. `completed` maps node id → observation summary; `tenant` is the
    run's tenant, so that whatever the replanner caches or salts stays inside it."""

    async def replan(self, request: str, failure_summary: str, completed: dict[str, str], *, tenant: str) -> Plan: ...


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

    def current_nodes(self) -> list[NodeResult]:
        return [node for node in self.nodes if node.round == self.round]


@dataclass(eq=False)
class _LiveRun:
    """A run this process drives: its task and the keeper of its lease."""

    keeper: LeaseKeeper
    task: asyncio.Task[None] | None = None
    webhook_url: str | None = None

    @property
    def lease(self) -> Lease:
        return self.keeper.lease

    @property
    def tenant(self) -> str:
        return self.keeper.lease.tenant

    @property
    def store_error(self) -> RunStoreError | None:
        return self.keeper.store_error


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
    ) -> None:
        self.store = store
        self.steering = steering or Steering()
        self.on_succeeded = on_succeeded
        self.scheduler = scheduler
        self.config = scheduler.config
        self.runs_config = store.config
        self.replanner = replanner
        self.replica_id = replica_id or self.runs_config.replica_id or default_replica_id()
        self._new_id = new_id or (lambda: "run_" + uuid.uuid4().hex[:20])
        self._live: dict[str, _LiveRun] = {}

    # -- public API ------------------------------------------------------------------------------

    async def start(
        self,
        tenant: str,
        request: str,
        plan: Plan,
        *,
        webhook_url: str | None = None,
        planner: dict[str, Any] | None = None,
    ) -> str:
        """Record a new run (leased to this process) and execute it in the background; returns its id
        at once. Over a cap: `PlanTooLarge` or a `QuotaExceeded` subclass, nothing written. The
        caller has checked `webhook_url` (`executors.webhooks.check_webhook_url`)."""
        check_plan_size(plan, self.runs_config)
        run_id = self._new_id()
        lease = await self.store.create_run(
            RunRecord(
                run_id=run_id, tenant=tenant, request=request, plan=plan, webhook_url=webhook_url, planner=planner
            ),
            owner=self.replica_id,
            ttl_s=self.runs_config.lease_ttl_s,
            quota=tenant_quota(self.runs_config),
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
            quota=tenant_quota(self.runs_config),
        )
        error = structured_error(reason[:500], "no_plan")
        await self.store.append_event(lease, "run_started", round_=0, data={"nodes": 0})
        await self.store.update_run(lease, status="no_plan", error=error)
        await self.store.append_event(lease, "run_finished", round_=0, data={"status": "no_plan", "error": error})
        await self.store.release_lease(lease)
        return run_id

    async def run(self, tenant: str, request: str, plan: Plan) -> RunView:
        """Start a run and wait for its end."""
        return await self.wait(tenant, await self.start(tenant, request, plan))

    async def resume(self, tenant: str, run_id: str) -> str:
        """Continue an interrupted run (finished nodes are not run again). A finished run is left as it
        is; a run with a live driver (here or in another process) raises `RunBusy`."""
        lease = await self.store.acquire_lease(
            tenant, run_id, owner=self.replica_id, ttl_s=self.runs_config.lease_ttl_s
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
        live = self._live.get(run_id)
        if live is not None and live.tenant == tenant and live.task is not None:
            await asyncio.shield(live.task)
            if live.store_error is not None:
                raise live.store_error
            if live.keeper.lost:  # another replica finishes it: wait for that
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

    async def list_runs(self, tenant: str, *, limit: int = 50) -> list[RunRecord]:
        return await self.store.list_runs(tenant, limit=limit)

    async def reopen(self, tenant: str, run_id: str, expect: ReopenFrom, announce: Announcement, **fields: Any) -> bool:
        """Move a paused or escalated run back to `running` under this process's lease (`RunStore.reopen`
        with `fields`) and drive it, its first event saying why; False when someone else was first."""
        lease = await self.store.reopen(
            tenant, run_id, owner=self.replica_id, ttl_s=self.runs_config.lease_ttl_s, expect=expect, **fields
        )
        if lease is None:
            return False
        self.launch(lease, resumed=True, announce=announce)
        return True

    async def decide(
        self,
        tenant: str,
        run_id: str,
        verdict: approvals.Verdict,
        *,
        by: approvals.Decider,
        reason: str | None = None,
        replan: bool = False,
    ) -> ApprovalDecision:
        """Approve or reject the run's pending request (see `executors.approvals.decide`)."""
        return await approvals.decide(self, tenant, run_id, verdict, by=by, reason=reason, replan=replan)

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
                await changes.wait()

    async def aclose(self) -> None:
        """Stop driving runs here; their leases are released, so another replica (or a resume) may
        continue them at once. They stay `running` in the store."""
        tasks = [live.task for live in self._live.values() if live.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- execution -------------------------------------------------------------------------------

    def _drives(self, run_id: str) -> bool:
        live = self._live.get(run_id)
        return live is not None and not live.keeper.lost

    async def _may_change(self, tenant: str, run_id: str) -> bool:
        """A driver lives, or the run waits for a person (whose decision wakes the followers). A live
        lease counts whatever the status says: a driver records the final status before it appends
        `run_finished` and releases the lease after, so a follower in another process that saw the
        status alone would end the stream without the run's last event."""
        if self._drives(run_id):
            return True
        record = await self.store.get_run(tenant, run_id)
        if record is None:
            return False
        return record.status == "awaiting_approval" or record.driven

    def launch(self, lease: Lease, *, resumed: bool, announce: Announcement | None = None) -> None:
        """Drive the run whose lease this process just acquired, in a background task."""
        keeper = LeaseKeeper(
            self.store,
            lease,
            ttl_s=self.runs_config.lease_ttl_s,
            every_s=self.runs_config.heartbeat_s,
            on_stop=lambda: _cancel(live.task),
        )
        live = _LiveRun(keeper=keeper)
        self._live[lease.run_id] = live
        live.task = asyncio.create_task(self._drive(live, resumed=resumed, announce=announce), name=lease.run_id)

    async def emit(
        self,
        live: _LiveRun,
        type_: EventType,
        *,
        round_: int = 0,
        node_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        event = await self.store.append_event(live.lease, type_, round_=round_, node_id=node_id, data=data)
        notifier = self.steering.notifier
        if notifier is not None and live.webhook_url is not None:
            notifier.notify(live.tenant, live.webhook_url, event)  # a background delivery: never waited for

    async def _drive(self, live: _LiveRun, *, resumed: bool, announce: Announcement | None = None) -> None:
        run_id = live.lease.run_id
        set_run_tenant(live.tenant)  # this task's context only: its tool calls see their own tenant
        live.keeper.start()
        try:
            record = await self.store.get_run(live.tenant, run_id)
            if record is None:
                return
            live.webhook_url = record.webhook_url
            if announce is not None:
                await self.emit(live, announce[0], round_=record.round, data=announce[1])
            await self.emit(live, "run_started", round_=record.round, data={"resumed": resumed})
            await self._rounds(live, record)
        except asyncio.CancelledError:
            if live.keeper.lost or live.store_error is not None:
                return  # stopped by the lease keeper: someone else drives it now, or nobody can
            raise  # the process is stopping: the run stays `running` and can be continued
        except LeaseLost:
            live.keeper.lost = True
            logger.warning("run %s: a write was refused (taken over); this driver stops", run_id)
        except RunStoreError as exc:
            # Not the run's fault, and the store cannot record a verdict anyway: the run stays
            # `running` (reported `interrupted` once its lease expires) and is continued later.
            logger.error("run %s stopped: %s; it continues once the run store is writable", run_id, exc)
            live.keeper.store_error = exc
        except Exception as exc:
            logger.exception("run %s crashed", run_id)
            error = structured_error(f"internal error: {type(exc).__name__}: {exc}", "internal_error")
            await self._finish(live, "failed", error)
        finally:
            await live.keeper.stop()
            if self._live.get(run_id) is live:
                del self._live[run_id]

    async def _rounds(self, live: _LiveRun, record: RunRecord) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.max_run_seconds
        run_id = record.run_id
        while True:
            earlier = await self.store.results(live.tenant, run_id)
            done = {r.node_id: r for r in earlier if r.round == record.round and r.status != "skipped"}
            reusable: dict[ReuseKey, NodeResult] = {}
            for result in earlier:
                key = reuse_key(result)
                if key is not None and result.round < record.round:
                    reusable.setdefault(key, result)
            counted = [r for r in earlier if record.budget_round <= r.round < record.round]
            steps_used = sum(1 for r in counted if r.attempts > 0) + sum(1 for r in done.values() if r.attempts > 0)
            consent = ApprovalState.of(record)
            refusal = consent.refusal(record.round)
            if refusal is not None:  # a person said no: stop, or re-plan with their reason
                completed = {n: observation_for_planner(r) for n, r in sorted(done.items()) if r.status == "succeeded"}
                if refusal.replan and self.replanner is not None and record.replans < self.config.max_replans:
                    next_record = await self._replan(live, record, approvals.refusal_summary(refusal), completed, [])
                    if next_record is None:
                        return
                    record = next_record
                    continue
                await self._finish(live, "failed", {**approvals.refusal_error(refusal), "round": record.round})
                return
            policy = self.steering.approvals
            if policy.plan_needed(record.tenant) and not consent.plan_approved(record.round):
                await self._pause(live, record, approvals.request_for(policy, "plan", record.round))
                return
            outcome = await self.scheduler.run_plan(
                record.plan,
                round_=record.round,
                observer=RunObserver(self, live),
                completed=done,
                reusable=reusable,
                max_steps=max(self.config.max_steps - steps_used, 0),
                max_seconds=max(deadline - loop.time(), 0.001),
                gate=approvals.call_gate(policy, consent, record.round),
            )
            if outcome.held:
                await self._pause(live, record, approvals.request_for(policy, "tool", record.round, outcome.held))
                return
            if outcome.ok:
                await self._finish(live, "succeeded", None)
                return
            failures = failure_list(outcome)
            stop = stop_reason(record, outcome, failures, earlier, self.config.max_replans, self.replanner is not None)
            if stop is not None:
                await self._finish(live, "failed", {**stop, "round": record.round, "failures": failures})
                return
            if self.replanner is None:  # unreachable: stop_reason stops runs without a replanner
                return
            # the re-planner sees typed summaries only (executors/observation.py), never a tool's text
            summary = failure_summary(record.plan, outcome)
            results = sorted(outcome.results.items())
            completed = {n: observation_for_planner(r) for n, r in results if r.status == "succeeded"}
            next_record = await self._replan(live, record, summary, completed, failures)
            if next_record is None:
                return
            record = next_record

    async def _replan(
        self, live: _LiveRun, record: RunRecord, summary: str, completed: dict[str, str], failures: list[dict[str, Any]]
    ) -> RunRecord | None:
        """The next round's record, or None when re-planning failed (the run is then finished)."""
        if self.replanner is None:
            return None
        try:
            new_plan = await self.replanner.replan(record.request, summary, completed, tenant=record.tenant)
            check_plan_size(new_plan, self.runs_config)
        except (LeaseLost, RunStoreError):
            raise
        except Exception as exc:
            kind = "plan_too_large" if isinstance(exc, PlanTooLarge) else "replan_failed"
            error = structured_error(f"re-planning failed: {type(exc).__name__}: {exc}", kind)
            await self._finish(live, "failed", {**error, "round": record.round, "failures": failures})
            return None
        record = await self.store.update_run(
            live.lease, plan=new_plan, round_=record.round + 1, replans=record.replans + 1
        )
        await self.emit(
            live,
            "replan",
            round_=record.round,
            data={"replans": record.replans, "failure_summary": summary, "nodes": len(new_plan.nodes)},
        )
        return record

    async def _pause(self, live: _LiveRun, record: RunRecord, request: ApprovalRequest) -> None:
        """Wait for a person: the request is durable, and the lease is released when the drive ends."""
        state = ApprovalState.of(record).with_pending(request)
        await self.store.update_run(live.lease, status="awaiting_approval", approval=state)
        await self.emit(live, "awaiting_approval", round_=record.round, data=request.model_dump(mode="json"))

    async def _finish(self, live: _LiveRun, status: RunStatus, error: dict[str, Any] | None) -> None:
        escalation = escalations.opened(self.steering.escalations, error) if status == "failed" else None
        record = await self.store.update_run(live.lease, status=status, error=error, escalation=escalation)
        if escalation is not None:
            self.steering.observer.escalated(record.tenant, str(escalation["reason"]))
            await self.emit(live, "escalated", round_=record.round, data=escalation)
        await self.emit(live, "run_finished", round_=record.round, data={"status": status, "error": error})
        if status == "succeeded" and self.on_succeeded is not None:
            try:
                await self.on_succeeded(record)
            except Exception:  # noqa: BLE001 - the run has succeeded whatever the hook does
                logger.exception("run %s: the on_succeeded hook failed", record.run_id)


def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()

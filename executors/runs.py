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

from executors.context import set_run_tenant
from executors.errors import RunNotFound, structured_error
from executors.failures import failure_list, failure_signature, failure_summary
from executors.leases import LeaseKeeper, default_replica_id
from executors.observation import NodeResult
from executors.quotas import PlanTooLarge, cap_output, check_plan_size, tenant_quota
from executors.scheduler import DagScheduler, ReuseKey, RoundOutcome, reuse_key
from executors.stores import (
    EventType,
    Lease,
    LeaseLost,
    RunEvent,
    RunRecord,
    RunStatus,
    RunStore,
    RunStoreError,
)
from planner.plan import Plan, PlanNode

logger = logging.getLogger("planstack.executors.runs")
_INTERNAL_FIELDS = {"status", "plan", "lease_owner", "lease_expires_at", "driven"}
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

    def current_nodes(self) -> list[NodeResult]:
        return [node for node in self.nodes if node.round == self.round]


@dataclass(eq=False)
class _LiveRun:
    """A run this process drives: its task and the keeper of its lease."""

    keeper: LeaseKeeper
    task: asyncio.Task[None] | None = None

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
        on_succeeded: RunHook | None = None,
    ) -> None:
        self.store = store
        self.on_succeeded = on_succeeded
        self.scheduler = scheduler
        self.config = scheduler.config
        self.runs_config = store.config
        self.replanner = replanner
        self.replica_id = replica_id or self.runs_config.replica_id or default_replica_id()
        self._new_id = new_id or (lambda: "run_" + uuid.uuid4().hex[:20])
        self._live: dict[str, _LiveRun] = {}

    # -- public API ------------------------------------------------------------------------------

    async def start(self, tenant: str, request: str, plan: Plan) -> str:
        """Record a new run (leased to this process) and execute it in the background; returns its id
        at once. Over a cap: `PlanTooLarge` or a `QuotaExceeded` subclass, nothing written."""
        check_plan_size(plan, self.runs_config)
        run_id = self._new_id()
        lease = await self.store.create_run(
            RunRecord(run_id=run_id, tenant=tenant, request=request, plan=plan),
            owner=self.replica_id,
            ttl_s=self.runs_config.lease_ttl_s,
            quota=tenant_quota(self.runs_config),
        )
        self._launch(lease, resumed=False)
        return run_id

    async def record_no_plan(self, tenant: str, request: str, reason: str) -> str:
        """Record a run whose request no tool fits: it ends at once as `no_plan`, with the reason."""
        run_id = self._new_id()
        lease = await self.store.create_run(
            RunRecord(run_id=run_id, tenant=tenant, request=request, plan=Plan()),
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
            self._launch(lease, resumed=True)
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
        self._launch(lease, resumed=True)
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
        )

    async def list_runs(self, tenant: str, *, limit: int = 50) -> list[RunRecord]:
        return await self.store.list_runs(tenant, limit=limit)

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
        if self._drives(run_id):
            return True
        record = await self.store.get_run(tenant, run_id)
        return record is not None and record.status == "running" and record.driven

    def _launch(self, lease: Lease, *, resumed: bool) -> None:
        keeper = LeaseKeeper(
            self.store,
            lease,
            ttl_s=self.runs_config.lease_ttl_s,
            every_s=self.runs_config.heartbeat_s,
            on_stop=lambda: _cancel(live.task),
        )
        live = _LiveRun(keeper=keeper)
        self._live[lease.run_id] = live
        live.task = asyncio.create_task(self._drive(live, resumed=resumed), name=lease.run_id)

    async def emit(
        self,
        live: _LiveRun,
        type_: EventType,
        *,
        round_: int = 0,
        node_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        await self.store.append_event(live.lease, type_, round_=round_, node_id=node_id, data=data)

    async def _drive(self, live: _LiveRun, *, resumed: bool) -> None:
        run_id = live.lease.run_id
        set_run_tenant(live.tenant)  # this task's context only: its tool calls see their own tenant
        live.keeper.start()
        try:
            record = await self.store.get_run(live.tenant, run_id)
            if record is None:
                return
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
            steps_used = sum(1 for r in earlier if r.attempts > 0 and r.round < record.round)
            steps_used += sum(1 for r in done.values() if r.attempts > 0)
            outcome = await self.scheduler.run_plan(
                record.plan,
                round_=record.round,
                observer=_RunObserver(self, live),
                completed=done,
                reusable=reusable,
                max_steps=max(self.config.max_steps - steps_used, 0),
                max_seconds=max(deadline - loop.time(), 0.001),
            )
            if outcome.ok:
                await self._finish(live, "succeeded", None)
                return
            failures = failure_list(outcome)
            stop = self._stop_reason(record, outcome, failures, earlier)
            if stop is not None:
                await self._finish(live, "failed", {**stop, "round": record.round, "failures": failures})
                return
            if self.replanner is None:  # unreachable: _stop_reason stops runs without a replanner
                return
            summary = failure_summary(record.plan, outcome)
            completed = {nid: r.summary for nid, r in sorted(outcome.results.items()) if r.status == "succeeded"}
            try:
                new_plan = await self.replanner.replan(record.request, summary, completed, tenant=record.tenant)
                check_plan_size(new_plan, self.runs_config)
            except (LeaseLost, RunStoreError):
                raise
            except Exception as exc:
                kind = "plan_too_large" if isinstance(exc, PlanTooLarge) else "replan_failed"
                error = structured_error(f"re-planning failed: {type(exc).__name__}: {exc}", kind)
                await self._finish(live, "failed", {**error, "round": record.round, "failures": failures})
                return
            record = await self.store.update_run(
                live.lease, plan=new_plan, round_=record.round + 1, replans=record.replans + 1
            )
            await self.emit(
                live,
                "replan",
                round_=record.round,
                data={"replans": record.replans, "failure_summary": summary, "nodes": len(new_plan.nodes)},
            )

    def _stop_reason(
        self, record: RunRecord, outcome: RoundOutcome, failures: list[dict[str, Any]], earlier: list[NodeResult]
    ) -> dict[str, Any] | None:
        """Why this failed round ends the run, or None when a re-plan may help."""
        if outcome.stop is not None:
            return outcome.stop
        first: dict[str, Any] = failures[0] if failures else {"node_id": "?", "error": {"error": "no output"}}
        what = f"{first['node_id']} ({first.get('tool')}): {(first.get('error') or {}).get('error', 'failed')}"
        if self.replanner is None:
            return structured_error(f"node {what}", "node_failed")
        open_tools = sorted({f["tool"] for f in failures if (f.get("error") or {}).get("type") == "circuit_open"})
        if open_tools:
            return structured_error(
                f"circuit breaker open for {', '.join(open_tools)}: the tool keeps failing; not re-planning",
                "circuit_open",
                retryable=True,
            )
        if record.replans >= self.config.max_replans:
            return structured_error(
                f"re-plan budget spent ({self.config.max_replans}); last failure: {what}", "replans_exhausted"
            )
        seen = {failure_signature(r) for r in earlier if r.round < record.round and r.status == "failed"}
        now = {failure_signature(r) for r in outcome.results.values() if r.status == "failed"}
        if now and now <= seen:
            return structured_error(f"the new plan failed exactly as before: {what}", "repeated_failure")
        return None

    async def _finish(self, live: _LiveRun, status: RunStatus, error: dict[str, Any] | None) -> None:
        record = await self.store.update_run(live.lease, status=status, error=error)
        await self.emit(live, "run_finished", round_=record.round, data={"status": status, "error": error})
        if status == "succeeded" and self.on_succeeded is not None:
            try:
                await self.on_succeeded(record)
            except Exception:  # noqa: BLE001 - the run has succeeded whatever the hook does
                logger.exception("run %s: the on_succeeded hook failed", record.run_id)


def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()


_SETTLED_EVENTS: dict[str, EventType] = {
    "succeeded": "node_finished",
    "failed": "node_failed",
    "skipped": "node_skipped",
}


class _RunObserver:
    """Scheduler hooks of one run: commit results (fenced on the run's lease), append events."""

    def __init__(self, service: RunService, live: _LiveRun) -> None:
        self._service = service
        self._live = live

    async def node_started(self, node: PlanNode, round_: int) -> None:
        await self._service.emit(self._live, "node_started", round_=round_, node_id=node.id, data={"tool": node.tool})

    async def node_retrying(
        self, node: PlanNode, round_: int, attempt: int, delay_s: float, error: dict[str, Any]
    ) -> None:
        data = {"tool": node.tool, "attempt": attempt, "delay_s": round(delay_s, 3), "error": error}
        await self._service.emit(self._live, "node_retrying", round_=round_, node_id=node.id, data=data)

    async def node_settled(self, result: NodeResult) -> NodeResult:
        """Commit the result; the COMMITTED one is returned, and it is what dependants are built from."""
        service = self._service
        capped = cap_output(result, service.runs_config, summary_chars=service.config.summary_chars)
        stored = await service.store.save_result(self._live.lease, capped)
        type_ = _SETTLED_EVENTS[stored.status]
        data = {
            "tool": stored.tool,
            "status": stored.status,
            "attempts": stored.attempts,
            "duration_ms": stored.duration_ms,
            "summary": stored.summary,
            "error": stored.error,
            "output_sha256": stored.output_sha256,
            "reused_from": stored.reused_from,
            "fallback_for": stored.fallback_for,
        }
        await service.emit(self._live, type_, round_=stored.round, node_id=stored.node_id, data=data)
        return stored

"""`RunService`: start, follow, inspect and resume durable plan runs.

A run is a request, a plan and a tenant. It executes in a background asyncio task, round by round:
round 0 runs the given plan; when nodes fail for good (no fallback rescued them) and a `Replanner`
is injected, it is asked for a new plan (at most `max_replans` times) and the next round runs it,
reusing every earlier result whose (tool, version, arguments) match. Every node result is committed
to the `RunStore` before its dependants are dispatched, and every step is an event in the run's
ordered log, so a run interrupted by a crash is resumed from the store without redoing finished
nodes, and `events()` can replay a run and then follow it live.

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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from executors.context import set_run_tenant
from executors.errors import RunNotFound, structured_error
from executors.observation import NodeResult, failure_summary_for_planner, observation_for_planner
from executors.scheduler import DagScheduler, ReuseKey, RoundOutcome, reuse_key
from executors.store import TERMINAL_STATUSES, EventType, RunEvent, RunRecord, RunStatus, RunStore, RunStoreError
from planner.plan import Plan, PlanNode

logger = logging.getLogger("planstack.executors.runs")


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
    """A run executing in this process; followers wait on `changed`."""

    tenant: str
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    last_seq: int = 0
    finished: bool = False
    task: asyncio.Task[None] | None = None
    store_error: RunStoreError | None = None  # the run stopped because the store failed

    def has_news(self, seen_seq: int) -> bool:
        return self.last_seq > seen_seq or self.finished


class RunService:
    """Owns the background tasks of runs; state lives in the store, not here."""

    def __init__(
        self,
        store: RunStore,
        scheduler: DagScheduler,
        *,
        replanner: Replanner | None = None,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        self.store = store
        self.scheduler = scheduler
        self.config = scheduler.config
        self.replanner = replanner
        self._new_id = new_id or (lambda: "run_" + uuid.uuid4().hex[:20])
        self._live: dict[str, _LiveRun] = {}

    # -- public API ------------------------------------------------------------------------------

    async def start(self, tenant: str, request: str, plan: Plan) -> str:
        """Record a new run and execute it in the background; returns its id at once."""
        run_id = self._new_id()
        self.store.create_run(RunRecord(run_id=run_id, tenant=tenant, request=request, plan=plan))
        self._launch(tenant, run_id, resumed=False)
        return run_id

    async def run(self, tenant: str, request: str, plan: Plan) -> RunView:
        """Start a run and wait for its end."""
        return await self.wait(tenant, await self.start(tenant, request, plan))

    async def resume(self, tenant: str, run_id: str) -> str:
        """Continue an interrupted run (finished nodes are not run again). A run that is live in
        this process or already finished is left as it is."""
        record = self.store.get_run(tenant, run_id)
        if record is None:
            raise RunNotFound(f"run {run_id!r} not found")
        if run_id not in self._live and record.status not in TERMINAL_STATUSES:
            self._launch(tenant, run_id, resumed=True)
        return run_id

    async def wait(self, tenant: str, run_id: str) -> RunView:
        live = self._live.get(run_id)
        if live is not None and live.tenant == tenant and live.task is not None:
            await asyncio.shield(live.task)
            if live.store_error is not None:
                raise live.store_error
        view = self.get(tenant, run_id)
        if view is None:
            raise RunNotFound(f"run {run_id!r} not found")
        return view

    def get(self, tenant: str, run_id: str) -> RunView | None:
        """The run with its node results; None for an unknown id or another tenant's run. A run
        recorded as running but not executing in this process is reported `interrupted`."""
        record = self.store.get_run(tenant, run_id)
        if record is None:
            return None
        status = record.status
        if status == "running" and run_id not in self._live:
            status = "interrupted"
        return RunView(
            **record.model_dump(exclude={"status", "plan"}),
            plan=record.plan,
            status=status,
            nodes=self.store.results(tenant, run_id),
        )

    def list_runs(self, tenant: str, *, limit: int = 50) -> list[RunRecord]:
        return self.store.list_runs(tenant, limit=limit)

    async def events(self, tenant: str, run_id: str) -> AsyncIterator[RunEvent]:
        """Stored events of the run, then live ones until it finishes (or stops executing here)."""
        if self.store.get_run(tenant, run_id) is None:
            raise RunNotFound(f"run {run_id!r} not found")
        last = 0
        while True:
            live = self._live.get(run_id)
            batch = self.store.events(tenant, run_id, after=last)
            for event in batch:
                last = event.seq
                yield event
                if event.type == "run_finished":
                    return
            if batch:
                continue
            if live is None or live.finished:
                return
            async with live.changed:
                await live.changed.wait_for(partial(live.has_news, last))

    async def aclose(self) -> None:
        """Stop executing runs (they stay `running` in the store and can be resumed)."""
        tasks = [live.task for live in self._live.values() if live.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- execution -------------------------------------------------------------------------------

    def _launch(self, tenant: str, run_id: str, *, resumed: bool) -> None:
        live = _LiveRun(tenant=tenant)
        self._live[run_id] = live
        live.task = asyncio.create_task(self._drive(tenant, run_id, live, resumed=resumed), name=run_id)

    async def emit(
        self,
        live: _LiveRun,
        run_id: str,
        type_: EventType,
        *,
        round_: int = 0,
        node_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        event = self.store.append_event(live.tenant, run_id, type_, round_=round_, node_id=node_id, data=data)
        async with live.changed:
            live.last_seq = event.seq
            live.changed.notify_all()

    async def _drive(self, tenant: str, run_id: str, live: _LiveRun, *, resumed: bool) -> None:
        set_run_tenant(tenant)  # this task's context only: its tool calls see their own tenant
        try:
            record = self.store.get_run(tenant, run_id)
            if record is None:
                return
            await self.emit(live, run_id, "run_started", round_=record.round, data={"resumed": resumed})
            await self._rounds(live, record)
        except asyncio.CancelledError:
            raise  # the process is stopping: the run stays `running` and can be resumed
        except RunStoreError as exc:
            # Not the run's fault, and the store cannot record a verdict anyway: the run stays
            # `running` (reported `interrupted`) and is resumed once the store works again.
            logger.error("run %s stopped: %s; resume it once the run store is writable", run_id, exc)
            live.store_error = exc
        except Exception as exc:
            logger.exception("run %s crashed", run_id)
            error = structured_error(f"internal error: {type(exc).__name__}: {exc}", "internal_error")
            await self._finish(live, run_id, "failed", error)
        finally:
            live.finished = True
            async with live.changed:
                live.changed.notify_all()
            if self._live.get(run_id) is live:
                del self._live[run_id]

    async def _rounds(self, live: _LiveRun, record: RunRecord) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.max_run_seconds
        run_id = record.run_id
        while True:
            earlier = self.store.results(live.tenant, run_id)
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
                observer=_RunObserver(self, live, run_id),
                completed=done,
                reusable=reusable,
                max_steps=max(self.config.max_steps - steps_used, 0),
                max_seconds=max(deadline - loop.time(), 0.001),
            )
            if outcome.ok:
                await self._finish(live, run_id, "succeeded", None)
                return
            failures = failure_list(outcome)
            stop = self._stop_reason(record, outcome, failures, earlier)
            if stop is not None:
                await self._finish(live, run_id, "failed", {**stop, "round": record.round, "failures": failures})
                return
            if self.replanner is None:  # unreachable: _stop_reason stops runs without a replanner
                return
            # the re-planner sees typed summaries only (executors/observation.py), never a tool's text
            results = outcome.results
            summary = failure_summary_for_planner(record.plan, outcome.round, outcome.lost, outcome.stop, results)
            completed = {n: observation_for_planner(r) for n, r in sorted(results.items()) if r.status == "succeeded"}
            try:
                new_plan = await self.replanner.replan(record.request, summary, completed, tenant=record.tenant)
            except Exception as exc:
                error = structured_error(f"re-planning failed: {type(exc).__name__}: {exc}", "replan_failed")
                await self._finish(live, run_id, "failed", {**error, "round": record.round, "failures": failures})
                return
            record = self.store.update_run(
                live.tenant, run_id, plan=new_plan, round_=record.round + 1, replans=record.replans + 1
            )
            await self.emit(
                live,
                run_id,
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
        seen = {_failure_signature(r) for r in earlier if r.round < record.round and r.status == "failed"}
        now = {_failure_signature(r) for r in outcome.results.values() if r.status == "failed"}
        if now and now <= seen:
            return structured_error(f"the new plan failed exactly as before: {what}", "repeated_failure")
        return None

    async def _finish(self, live: _LiveRun, run_id: str, status: RunStatus, error: dict[str, Any] | None) -> None:
        record = self.store.update_run(live.tenant, run_id, status=status, error=error)
        await self.emit(live, run_id, "run_finished", round_=record.round, data={"status": status, "error": error})


_SETTLED_EVENTS: dict[str, EventType] = {
    "succeeded": "node_finished",
    "failed": "node_failed",
    "skipped": "node_skipped",
}


class _RunObserver:
    """Scheduler hooks of one run: commit results, append events."""

    def __init__(self, service: RunService, live: _LiveRun, run_id: str) -> None:
        self._service = service
        self._live = live
        self._run_id = run_id

    async def node_started(self, node: PlanNode, round_: int) -> None:
        await self._service.emit(
            self._live, self._run_id, "node_started", round_=round_, node_id=node.id, data={"tool": node.tool}
        )

    async def node_retrying(
        self, node: PlanNode, round_: int, attempt: int, delay_s: float, error: dict[str, Any]
    ) -> None:
        data = {"tool": node.tool, "attempt": attempt, "delay_s": round(delay_s, 3), "error": error}
        await self._service.emit(self._live, self._run_id, "node_retrying", round_=round_, node_id=node.id, data=data)

    async def node_settled(self, result: NodeResult) -> None:
        stored = self._service.store.save_result(self._live.tenant, self._run_id, result)  # committed here
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
        await self._service.emit(
            self._live, self._run_id, type_, round_=stored.round, node_id=stored.node_id, data=data
        )


def failure_list(outcome: RoundOutcome) -> list[dict[str, Any]]:
    """Nodes that failed or were skipped in a round, root causes (failed) first."""
    rows = [r for r in outcome.results.values() if r.status != "succeeded"]
    rows.sort(key=lambda r: (r.status != "failed", r.node_id))
    return [{"node_id": r.node_id, "tool": r.tool, "status": r.status, "error": r.error} for r in rows]


def _failure_signature(result: NodeResult) -> tuple[str, str, str]:
    return (result.tool, str((result.error or {}).get("type", "")), result.input_hash or "")

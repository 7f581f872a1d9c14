"""`RunDriver`: drives one run whose lease this process holds — the round loop and its events.

Round 0 runs the run's plan; when nodes fail for good (no fallback rescued them) and a `Replanner`
is given, it is asked for a new plan (at most `executors.max_replans` times) and the next round
runs it, reusing every earlier result whose (tool, version, arguments) match. The driver is the
scheduler's observer for its run: each node result is committed to the store (fenced on the lease,
capped in size) before its dependants are dispatched, and every step is an event in the run's
ordered log (POSTed to the run's webhook too, in the background). A run that needs a person pauses
(`awaiting_approval`, the lease is released when the drive ends); one that ends for good may open
an escalation. The lease is renewed by the driver's `LeaseKeeper`, which stops the drive when the
lease is lost (another replica took the run over) or cannot be renewed before it expires.

A run that brings its own tools (`RunRecord.tools`: toolsets, the caller's tools, built-in steps)
is executed with the registry `RunTools` builds from what it recorded, and re-planned over the same
catalog. When a round can go no further without answers from its caller (executors.tool_calls), the
driver announces the new calls (`tool_call_required`) and pauses the run in `requires_action`,
unless an answer arrived meanwhile: then it runs the round again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from contract.plan import Plan, PlanNode
from executors.approvals import ApprovalRequest, ApprovalState, call_gate, refusal_error, refusal_summary, request_for
from executors.context import set_run_tenant
from executors.errors import structured_error
from executors.escalations import Escalation
from executors.failures import failure_list, failure_summary, stop_reason
from executors.leases import LeaseKeeper
from executors.observation import NodeResult, observation_for_planner
from executors.quotas import PlanTooLarge, cap_output, check_plan_size
from executors.registry import ToolRegistry
from executors.scheduler import DagScheduler, ReuseKey, RoundOutcome, reuse_key
from executors.sources.client_tools import PausingToolSpec
from executors.steering import Steering
from executors.stores import (
    EventType,
    Lease,
    LeaseLost,
    RunRecord,
    RunsConfig,
    RunStatus,
    RunStore,
    RunStoreError,
    RunUpdate,
    ToolAnswer,
)
from executors.tool_calls import ActionState, PendingCall

logger = logging.getLogger("planstack.executors.runs")
Announcement = tuple[EventType, dict[str, Any]]
"""An event the next driver appends first (a decision that handed it the run)."""
RunHook = Callable[[RunRecord], Awaitable[None]]
"""Called with the finished record of a run that succeeded (e.g. to learn from it); its errors are logged."""
_SETTLED_EVENTS: dict[str, EventType] = {
    "succeeded": "node_finished",
    "failed": "node_failed",
    "skipped": "node_skipped",
}


class Replanner(Protocol):
    """Writes a new plan after a failure. `completed` maps node id → observation summary; `tenant` is the
    run's tenant, so that whatever the replanner caches or salts stays inside it. `tools` (OpenAI
    format), given only for a run with its own tools, is the catalog to plan over."""

    async def replan(
        self,
        request: str,
        failure_summary: str,
        completed: dict[str, str],
        *,
        tenant: str,
        tools: list[dict[str, Any]] | None = None,
    ) -> Plan: ...


class RunTools(Protocol):
    """The tools of a run that recorded its own (`RunRecord.tools`)."""

    async def registry_for(self, record: RunRecord) -> ToolRegistry:
        """The registry that executes them (built-in tools included when the run uses them)."""
        ...

    def catalog_for(self, record: RunRecord) -> list[dict[str, Any]]:
        """The same tools in OpenAI format, for re-planning."""
        ...


@dataclass(frozen=True)
class DriveContext:
    """What the drivers of one process share."""

    store: RunStore
    scheduler: DagScheduler
    steering: Steering
    runs_config: RunsConfig
    replanner: Replanner | None = None
    on_succeeded: RunHook | None = None
    clock: Callable[[], float] = field(default=time.time)
    tools: RunTools | None = None


class RunDriver:
    """One driven run: its background task, its lease keeper, and the scheduler's hooks for it."""

    def __init__(self, context: DriveContext, lease: Lease) -> None:
        self.context = context
        self.config = context.scheduler.config
        self.store = context.store
        self.keeper = LeaseKeeper(
            context.store,
            lease,
            ttl_s=context.runs_config.lease_ttl_s,
            every_s=context.runs_config.heartbeat_s,
            on_stop=self._cancel,
        )
        self.task: asyncio.Task[None] | None = None
        self.webhook_url: str | None = None
        self._announced: set[tuple[int, str, str]] = set()  # (round, node, input hash) of announced calls

    @property
    def lease(self) -> Lease:
        return self.keeper.lease

    @property
    def run_id(self) -> str:
        return self.keeper.lease.run_id

    @property
    def tenant(self) -> str:
        return self.keeper.lease.tenant

    @property
    def lost(self) -> bool:
        """Another replica took the run over: it finishes it."""
        return self.keeper.lost

    @property
    def store_error(self) -> RunStoreError | None:
        """Why the drive stopped when the store could not be written."""
        return self.keeper.store_error

    def start(
        self, *, resumed: bool, announce: Announcement | None, on_done: Callable[[RunDriver], None]
    ) -> asyncio.Task[None]:
        self.task = asyncio.create_task(self._drive(resumed, announce, on_done), name=self.run_id)
        return self.task

    def _cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def emit(
        self, type_: EventType, *, round_: int = 0, node_id: str | None = None, data: dict[str, Any] | None = None
    ) -> None:
        event = await self.store.append_event(self.lease, type_, round_=round_, node_id=node_id, data=data)
        notifier = self.context.steering.notifier
        if notifier is not None and self.webhook_url is not None:
            notifier.notify(self.tenant, self.webhook_url, event)  # a background delivery: never waited for

    # -- the drive -------------------------------------------------------------------------------

    async def _drive(self, resumed: bool, announce: Announcement | None, on_done: Callable[[RunDriver], None]) -> None:
        set_run_tenant(self.tenant, self.run_id)  # this task's context only: its tool calls see their own run
        self.keeper.start()
        try:
            record = await self.store.get_run(self.tenant, self.run_id)
            if record is None:
                return
            self.webhook_url = record.webhook_url
            if announce is not None:
                await self.emit(announce[0], round_=record.round, data=announce[1])
            await self.emit("run_started", round_=record.round, data={"resumed": resumed})
            await self._rounds(record)
        except asyncio.CancelledError:
            if self.lost or self.store_error is not None:
                return  # stopped by the lease keeper: someone else drives it now, or nobody can
            raise  # the process is stopping: the run stays `running` and can be continued
        except LeaseLost:
            self.keeper.lost = True
            logger.warning("run %s: a write was refused (taken over); this driver stops", self.run_id)
        except RunStoreError as exc:
            # Not the run's fault, and the store cannot record a verdict anyway: the run stays
            # `running` (reported `interrupted` once its lease expires) and is continued later.
            logger.error("run %s stopped: %s; it continues once the run store is writable", self.run_id, exc)
            self.keeper.store_error = exc
        except Exception as exc:
            logger.exception("run %s crashed", self.run_id)
            error = structured_error(f"internal error: {type(exc).__name__}: {exc}", "internal_error")
            await self._finish("failed", error)
        finally:
            await self.keeper.stop()
            on_done(self)

    async def _rounds(self, record: RunRecord) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.max_run_seconds
        policy = self.context.steering.approvals
        registry = await self._registry(record)
        if record.tools is not None and registry is None:
            error = structured_error(
                "this process cannot execute the run's own tools (no toolset service)", "tools_unavailable"
            )
            await self._finish("failed", error)
            return
        while True:
            earlier = await self.store.results(self.tenant, self.run_id)
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
                if refusal.replan and self.context.replanner is not None and record.replans < self.config.max_replans:
                    next_record = await self._replan(record, refusal_summary(refusal), completed, [])
                    if next_record is None:
                        return
                    record = next_record
                    continue
                await self._finish("failed", {**refusal_error(refusal), "round": record.round})
                return
            if policy.plan_needed(record.tenant) and not consent.plan_approved(record.round):
                await self._pause(record, request_for(policy, "plan", record.round, now=self.context.clock()))
                return
            outcome = await self.context.scheduler.run_plan(
                record.plan,
                round_=record.round,
                observer=self,
                completed=done,
                reusable=reusable,
                max_steps=max(self.config.max_steps - steps_used, 0),
                max_seconds=max(deadline - loop.time(), 0.001),
                gate=call_gate(policy, consent, record.round),
                registry=registry,
                answers=await self._answers(record),
            )
            if outcome.held:
                request = request_for(policy, "tool", record.round, outcome.held, now=self.context.clock())
                await self._pause(record, request)
                return
            if outcome.awaiting:
                assert registry is not None  # only a run's own registry has tools the caller answers
                if await self._await_caller(record, outcome, registry):
                    return
                continue  # an answer arrived meanwhile: run the round again
            if outcome.ok:
                await self._finish("succeeded", None)
                return
            failures = failure_list(outcome)
            can_replan = self.context.replanner is not None
            stop = stop_reason(record, outcome, failures, earlier, self.config.max_replans, can_replan)
            if stop is not None:
                await self._finish("failed", {**stop, "round": record.round, "failures": failures})
                return
            # the re-planner sees typed summaries only (executors/observation.py), never a tool's text
            summary = failure_summary(record.plan, outcome)
            results = sorted(outcome.results.items())
            completed = {n: observation_for_planner(r) for n, r in results if r.status == "succeeded"}
            next_record = await self._replan(record, summary, completed, failures)
            if next_record is None:
                return
            record = next_record

    async def _replan(
        self, record: RunRecord, summary: str, completed: dict[str, str], failures: list[dict[str, Any]]
    ) -> RunRecord | None:
        """The next round's record, or None when re-planning failed (the run is then finished)."""
        replanner = self.context.replanner
        if replanner is None:  # unreachable: stop_reason stops runs without a replanner
            return None
        try:
            tools = self.context.tools
            catalog = {} if record.tools is None or tools is None else {"tools": tools.catalog_for(record)}
            new_plan = await replanner.replan(record.request, summary, completed, tenant=record.tenant, **catalog)
            check_plan_size(new_plan, self.context.runs_config)
        except (LeaseLost, RunStoreError):
            raise
        except Exception as exc:
            kind = "plan_too_large" if isinstance(exc, PlanTooLarge) else "replan_failed"
            error = structured_error(f"re-planning failed: {type(exc).__name__}: {exc}", kind)
            await self._finish("failed", {**error, "round": record.round, "failures": failures})
            return None
        record = await self.store.update_run(
            self.lease, RunUpdate(plan=new_plan, round=record.round + 1, replans=record.replans + 1)
        )
        data = {"replans": record.replans, "failure_summary": summary, "nodes": len(new_plan.nodes)}
        await self.emit("replan", round_=record.round, data=data)
        self.context.steering.observer.replanned()
        return record

    async def _registry(self, record: RunRecord) -> ToolRegistry | None:
        """The run's own registry, or None for a run of the built-in catalog."""
        if record.tools is None or self.context.tools is None:
            return None
        return await self.context.tools.registry_for(record)

    async def _answers(self, record: RunRecord) -> dict[str, ToolAnswer]:
        if record.tools is None:
            return {}  # only a run's own tools can be answered by its caller
        return {a.node_id: a for a in await self.store.tool_answers(self.tenant, self.run_id, record.round)}

    async def _await_caller(self, record: RunRecord, outcome: RoundOutcome, registry: ToolRegistry) -> bool:
        """Announce the calls handed to the caller and pause for their answers; False when one was answered
        meanwhile (the round then runs again)."""
        now = self.context.clock()
        previous = ActionState.of(record)
        calls: list[PendingCall] = []
        for held in outcome.awaiting:
            spec = registry.get(held.tool)
            assert isinstance(spec, PausingToolSpec)
            known = (
                None
                if previous is None or previous.round != record.round
                else previous.find(held.node_id, held.input_hash)
            )
            calls.append(
                PendingCall(
                    node_id=held.node_id,
                    tool=held.tool,
                    kind=spec.pause,
                    args=held.args,
                    input_hash=held.input_hash,
                    requested_at=known.requested_at if known else now,
                    expires_at=known.expires_at if known else now + spec.answer_timeout_s,
                )
            )
            key = (record.round, held.node_id, held.input_hash)
            if known is None and key not in self._announced:  # announced before the pause: answers may come early
                self._announced.add(key)
                await self.emit(
                    "tool_call_required", round_=record.round, node_id=held.node_id, data=calls[-1].event_data()
                )
        action = ActionState(round=record.round, calls=calls).model_dump(mode="json")
        paused = await self.store.pause_for_action(
            self.lease, action, round_=record.round, awaited=[call.node_id for call in calls]
        )
        return paused is not None

    async def _pause(self, record: RunRecord, request: ApprovalRequest) -> None:
        """Wait for a person: the request is durable, and the lease is released when the drive ends."""
        state = ApprovalState.of(record).with_pending(request)
        await self.store.update_run(self.lease, RunUpdate(status="awaiting_approval", approval=state))
        await self.emit("awaiting_approval", round_=record.round, data=request.model_dump(mode="json"))

    async def _finish(self, status: RunStatus, error: dict[str, Any] | None) -> None:
        steering = self.context.steering
        opened = (
            Escalation.opened(steering.escalations, error, now=self.context.clock()) if status == "failed" else None
        )
        escalation = None if opened is None else opened.as_record()
        record = await self.store.update_run(self.lease, RunUpdate(status=status, error=error, escalation=escalation))
        if opened is not None and escalation is not None:
            steering.observer.escalated(record.tenant, opened.reason)
            await self.emit("escalated", round_=record.round, data=escalation)
        await self.emit("run_finished", round_=record.round, data={"status": status, "error": error})
        steering.observer.run_finished(status)
        hook = self.context.on_succeeded
        if status == "succeeded" and hook is not None:
            try:
                await hook(record)
            except Exception:  # noqa: BLE001 - the run has succeeded whatever the hook does
                logger.exception("run %s: the on_succeeded hook failed", record.run_id)

    # -- the scheduler's hooks (SchedulerObserver) -----------------------------------------------

    async def node_started(self, node: PlanNode, round_: int) -> None:
        await self.emit("node_started", round_=round_, node_id=node.id, data={"tool": node.tool})

    async def node_retrying(
        self, node: PlanNode, round_: int, attempt: int, delay_s: float, error: dict[str, Any]
    ) -> None:
        data = {"tool": node.tool, "attempt": attempt, "delay_s": round(delay_s, 3), "error": error}
        await self.emit("node_retrying", round_=round_, node_id=node.id, data=data)

    async def node_settled(self, result: NodeResult) -> NodeResult:
        """Commit the result; the COMMITTED one is returned, and it is what dependants are built from."""
        capped = cap_output(result, self.context.runs_config, summary_chars=self.config.summary_chars)
        stored = await self.store.save_result(self.lease, capped)
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
        await self.emit(_SETTLED_EVENTS[stored.status], round_=stored.round, node_id=stored.node_id, data=data)
        return stored

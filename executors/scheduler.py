"""`DagScheduler`: run one plan (one *round* of a run) as a DAG, event-driven.

A node is dispatched the moment everything it waits for (`PlanNode.upstream()`) has an output; each
running node is an asyncio task whose completion wakes the loop through a queue (no polling). A
node's result is handed to the observer (which commits it) before any dependant is dispatched.

- Fallback: when a node fails for good (or is skipped) and names a `fallback`, that standby node is
  activated; its output then stands in for the primary's wherever `$primary` is referenced.
- A node whose upstream failed (with no fallback rescuing it) is `skipped`, with the reason.
- Reuse: a node whose (tool, version, normalised arguments) matches a result in `reusable` (from an
  earlier round) takes that result without calling the tool.
- Caps: at most `max_steps` tool executions (then nothing more is dispatched, the rest is skipped),
  and `max_seconds` of wall time (running calls are cancelled and recorded as `run_timeout`).
- Approvals: a ready node whose call the `CallGate` holds is not dispatched; it is returned in
  `RoundOutcome.held` with its resolved arguments, and it and everything waiting on it stay
  unsettled (nothing is committed for them), so the round can run again once a person decided.
- Calls the caller answers (`PausingToolSpec`: the app's own tools, `ask_user`): a ready node settles
  with the answer recorded for it (`answers`, matched on its input hash); without one it is returned
  in `RoundOutcome.awaiting` and, like a held call, leaves what waits on it unsettled.
- A run may bring its own tools (toolsets, the caller's tools): `registry` replaces the scheduler's
  for that round.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from contract.plan import Plan, PlanNode
from executors.approvals import CallGate, HeldCall
from executors.breaker import BreakerBoard
from executors.config import ExecutorConfig
from executors.errors import ExecutorError, RunTimeout, StepCapReached, ToolExecutionError, UpstreamFailed
from executors.execution import (
    ConcurrencyLimits,
    NodeExecutor,
    NullObserver,
    RetryPolicy,
    SchedulerObserver,
    Sleep,
    ToolCallObserver,
)
from executors.observation import NodeResult, sha256_json, summarize_result
from executors.references import resolve_args
from executors.registry import ToolRegistry, ToolSpec
from executors.sources.client_tools import PausingToolSpec
from executors.stores import ToolAnswer

ReuseKey = tuple[str, str, str]
"""(tool, tool version, input hash)."""

_Effective = Literal["ok", "failed", "wait"]


def reuse_key(result: NodeResult) -> ReuseKey | None:
    if result.status != "succeeded" or result.input_hash is None:
        return None
    return (result.tool, result.tool_version or "", result.input_hash)


@dataclass
class RoundOutcome:
    """What one round produced. `ok` means every non-standby node has an output (its own or a
    fallback's) and no cap was hit."""

    round: int
    ok: bool
    results: dict[str, NodeResult]
    steps: int
    stop: dict[str, Any] | None = None
    lost: list[str] = field(default_factory=list)  # nodes whose output is missing
    held: list[HeldCall] = field(default_factory=list)  # calls waiting for approval (the round is paused)
    awaiting: list[HeldCall] = field(default_factory=list)  # calls handed to the caller, not answered yet


class DagScheduler:
    """Runs plans. One instance is shared by all runs of a process: limits and breakers are global."""

    def __init__(
        self,
        registry: ToolRegistry,
        config: ExecutorConfig | None = None,
        *,
        breakers: BreakerBoard | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.perf_counter,
        tool_calls: ToolCallObserver | None = None,
    ) -> None:
        self.registry = registry
        self.tool_calls = tool_calls
        self.config = config or ExecutorConfig()
        self.breakers = breakers or BreakerBoard(self.config.breaker_threshold, self.config.breaker_cooldown_s)
        self._sleep = sleep
        self._retry = RetryPolicy(self.config, rng or random.Random())
        self._wall_clock = wall_clock
        self._monotonic = monotonic
        self._executor_by_loop: tuple[asyncio.AbstractEventLoop, NodeExecutor] | None = None

    def _executor(self) -> NodeExecutor:
        """The node executor bound to the running loop (semaphores belong to one loop)."""
        loop = asyncio.get_running_loop()
        if self._executor_by_loop is None or self._executor_by_loop[0] is not loop:
            executor = NodeExecutor(
                self.config,
                ConcurrencyLimits(self.config),
                self.breakers,
                self._retry,
                sleep=self._sleep,
                wall_clock=self._wall_clock,
                monotonic=self._monotonic,
                tool_calls=self.tool_calls,
            )
            self._executor_by_loop = (loop, executor)
        return self._executor_by_loop[1]

    async def run_plan(
        self,
        plan: Plan,
        *,
        round_: int = 0,
        observer: SchedulerObserver | None = None,
        completed: Mapping[str, NodeResult] | None = None,
        reusable: Mapping[ReuseKey, NodeResult] | None = None,
        max_steps: int | None = None,
        max_seconds: float | None = None,
        gate: CallGate | None = None,
        registry: ToolRegistry | None = None,
        answers: Mapping[str, ToolAnswer] | None = None,
    ) -> RoundOutcome:
        """Run `plan` to the end. `completed` holds results of this round already committed
        (resume): those nodes are not run again. `gate` holds calls that need an approval; `answers`
        (node id → answer) settle the calls the caller answered; `registry` is the run's own."""
        runner = _RoundRunner(
            self,
            plan,
            round_,
            observer or NullObserver(),
            dict(completed or {}),
            dict(reusable or {}),
            self.config.max_steps if max_steps is None else max_steps,
            gate,
            registry or self.registry,
            dict(answers or {}),
        )
        return await runner.run(self.config.max_run_seconds if max_seconds is None else max_seconds)


class _RoundRunner:
    """The mutable state of one round; lives only inside `DagScheduler.run_plan`."""

    def __init__(
        self,
        scheduler: DagScheduler,
        plan: Plan,
        round_: int,
        observer: SchedulerObserver,
        completed: dict[str, NodeResult],
        reusable: dict[ReuseKey, NodeResult],
        max_steps: int,
        gate: CallGate | None = None,
        registry: ToolRegistry | None = None,
        answers: dict[str, ToolAnswer] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.registry = registry or scheduler.registry
        self.answers = answers or {}
        self.gate = gate
        self.held: dict[str, HeldCall] = {}
        self.awaiting: dict[str, HeldCall] = {}
        self.executor = scheduler._executor()
        self.round = round_
        self.observer = observer
        self.reusable = reusable
        self.max_steps = max_steps
        self.nodes: dict[str, PlanNode] = {node.id: node for node in plan.nodes}
        self.standby = plan.standby_ids() & self.nodes.keys()
        self.dependants: dict[str, set[str]] = defaultdict(set)
        for up, down in plan.edges():
            self.dependants[up].add(down)
        self.primaries_of: dict[str, set[str]] = defaultdict(set)
        for node in plan.nodes:
            if node.fallback is not None:
                self.primaries_of[node.fallback].add(node.id)
        self.results: dict[str, NodeResult] = {k: v for k, v in completed.items() if k in self.nodes}
        self.status: dict[str, str] = {}
        for node_id in self.nodes:
            if node_id in self.results:
                self.status[node_id] = self.results[node_id].status
            else:
                self.status[node_id] = "standby" if node_id in self.standby else "pending"
        self.tasks: dict[str, asyncio.Task[NodeResult]] = {}
        self.done: asyncio.Queue[asyncio.Task[NodeResult]] = asyncio.Queue()
        self.steps = 0
        self.stop: ExecutorError | None = None

    # -- main loop -------------------------------------------------------------------------------

    async def run(self, max_seconds: float) -> RoundOutcome:
        deadline = asyncio.timeout(max_seconds)
        try:
            async with deadline:
                for node_id in self.results:  # resumed: activate fallbacks of failed primaries
                    self._activate_fallback(node_id)
                for node_id in list(self.nodes):
                    await self._consider(node_id)
                while self.tasks:
                    task = await self.done.get()
                    node_id = task.get_name()
                    self.tasks.pop(node_id, None)
                    await self._settle(self._task_result(node_id, task))
        except TimeoutError:
            if not deadline.expired():
                raise
            await self._cancel_running()
            self.stop = RunTimeout(f"run exceeded its wall-time cap of {max_seconds:g} s")
            self.tasks.clear()
            for node_id in [n for n, status in self.status.items() if status == "running"]:
                await self._settle(self._settled_without_call(node_id, "failed", self.stop))
        except BaseException:
            await self._cancel_running()  # cancelled from outside: commit nothing for running nodes
            raise
        if self.stop is not None:  # a cap ended the round: held calls are skipped like the rest
            for node_id in [*self.held, *self.awaiting]:
                self.status[node_id] = "pending"
            self.held.clear()
            self.awaiting.clear()
        # Never dispatched (step cap, or waiting on a standby node): skipped. While calls are held for
        # an approval or an answer, what waits stays unsettled instead: the round runs again after it.
        for node_id in [] if self.held or self.awaiting else list(self.nodes):
            if self.status[node_id] == "pending":
                reason = self.stop or UpstreamFailed(
                    f"{node_id} never became ready (waits on {', '.join(sorted(self._unfinished_upstream(node_id)))})"
                )
                await self._settle(self._settled_without_call(node_id, "skipped", reason))
        lost = [n for n in self.nodes if n not in self.standby and self._effective(n) != "ok"]
        return RoundOutcome(
            round=self.round,
            ok=not lost and self.stop is None and not self.held and not self.awaiting,
            results=dict(self.results),
            steps=self.steps,
            stop=None if self.stop is None else self.stop.structured(),
            lost=lost,
            held=list(self.held.values()),
            awaiting=list(self.awaiting.values()),
        )

    async def _cancel_running(self) -> None:
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _task_result(self, node_id: str, task: asyncio.Task[NodeResult]) -> NodeResult:
        if not task.cancelled() and task.exception() is None:
            return task.result()
        problem = "cancelled" if task.cancelled() else repr(task.exception())
        return self._settled_without_call(node_id, "failed", ToolExecutionError(f"internal error: {problem}"))

    # -- state transitions -----------------------------------------------------------------------

    async def _settle(self, result: NodeResult) -> None:
        node_id = result.node_id
        # Durable before any dependant is dispatched; dependants see what was COMMITTED.
        result = await self.observer.node_settled(result) or result
        self.results[node_id] = result
        self.status[node_id] = result.status
        self._activate_fallback(node_id)
        fallback = self.nodes[node_id].fallback
        if fallback is not None and self.status.get(fallback) == "pending":
            await self._consider(fallback)
        for dependant in sorted(self._waiting_on(node_id, set())):
            await self._consider(dependant)

    def _activate_fallback(self, node_id: str) -> None:
        fallback = self.nodes[node_id].fallback
        failed = self.status[node_id] in ("failed", "skipped")
        if failed and fallback is not None and self.status.get(fallback) == "standby":
            self.status[fallback] = "pending"

    def _waiting_on(self, node_id: str, seen: set[str]) -> set[str]:
        """Nodes that may have become ready now that `node_id` settled (through fallbacks too)."""
        seen.add(node_id)
        waiting = set(self.dependants.get(node_id, ()))
        for primary in self.primaries_of.get(node_id, ()):
            if primary not in seen and self.status[primary] in ("failed", "skipped"):
                waiting |= self._waiting_on(primary, seen)
        return waiting

    def _effective(self, node_id: str, seen: frozenset[str] = frozenset()) -> _Effective:
        status = self.status.get(node_id)
        if status == "succeeded":
            return "ok"
        if status in ("failed", "skipped"):
            fallback = self.nodes[node_id].fallback
            if fallback in self.nodes and fallback not in seen:
                return self._effective(fallback, seen | {node_id})
            return "failed"
        return "wait"

    def _output_of(self, node_id: str, seen: frozenset[str] = frozenset()) -> Any:
        status = self.status.get(node_id)
        if status == "succeeded":
            return self.results[node_id].output
        fallback = self.nodes[node_id].fallback if node_id in self.nodes else None
        if status in ("failed", "skipped") and fallback in self.nodes and fallback not in seen:
            return self._output_of(fallback, seen | {node_id})
        raise KeyError(node_id)

    def _unfinished_upstream(self, node_id: str) -> set[str]:
        return {up for up in self.nodes[node_id].upstream() if self._effective(up) != "ok"}

    async def _consider(self, node_id: str) -> None:
        """Dispatch or skip `node_id` if everything it waits for has settled."""
        if self.status[node_id] != "pending" or self.stop is not None:
            return
        node = self.nodes[node_id]
        waiting = False
        for up in sorted(node.upstream()):
            if up not in self.nodes:
                error = UpstreamFailed(f"{node_id} depends on {up}, which is not in the plan")
                await self._settle(self._settled_without_call(node_id, "skipped", error))
                return
            state = self._effective(up)
            if state == "failed":
                kind = self.results[up].error or {}
                error = UpstreamFailed(f"skipped: upstream {up} {self.status[up]} ({kind.get('type', 'error')})")
                await self._settle(self._settled_without_call(node_id, "skipped", error))
                return
            waiting = waiting or state == "wait"
        if not waiting:
            await self._dispatch(node)

    async def _dispatch(self, node: PlanNode) -> None:
        fallback_for = self._fallback_for(node.id)
        try:
            spec = self.registry.get(node.tool)
            resolved = resolve_args(node.args, self._output_of)
            kwargs, json_args = spec.prepare_call(resolved)
        except ExecutorError as exc:
            await self._settle(self._settled_without_call(node.id, "failed", exc, fallback_for=fallback_for))
            return
        input_hash = sha256_json(json_args)
        previous = self.reusable.get((spec.name, spec.version, input_hash))
        if previous is not None:
            await self._settle(await self._reused(node, previous, fallback_for))
            return
        if self.gate is not None and self.gate.holds(spec, node.id, input_hash):
            self.status[node.id] = "held"
            self.held[node.id] = HeldCall(node_id=node.id, tool=spec.name, args=json_args, input_hash=input_hash)
            return
        answer = self.answers.get(node.id)
        if isinstance(spec, PausingToolSpec) and (answer is None or answer.input_hash != input_hash):
            self.status[node.id] = "held"
            self.awaiting[node.id] = HeldCall(node_id=node.id, tool=spec.name, args=json_args, input_hash=input_hash)
            return
        if self.steps >= self.max_steps:
            self.stop = StepCapReached(f"step cap reached: {self.max_steps} tool executions in this run")
            return
        self.steps += 1
        if isinstance(spec, PausingToolSpec) and answer is not None:
            await self._settle(await self._answered(node, spec, json_args, input_hash, answer, fallback_for))
            return
        self.status[node.id] = "running"
        await self.observer.node_started(node, self.round)
        task = asyncio.create_task(
            self.executor.execute(
                node,
                spec,
                kwargs,
                json_args,
                input_hash,
                round_=self.round,
                observer=self.observer,
                fallback_for=fallback_for,
            ),
            name=node.id,
        )
        self.tasks[node.id] = task
        task.add_done_callback(self.done.put_nowait)

    def _fallback_for(self, node_id: str) -> str | None:
        primaries = sorted(p for p in self.primaries_of.get(node_id, ()) if self.status[p] in ("failed", "skipped"))
        return primaries[0] if primaries else None

    # -- results without a tool call -------------------------------------------------------------

    def _settled_without_call(
        self,
        node_id: str,
        status: Literal["failed", "skipped"],
        error: ExecutorError,
        *,
        fallback_for: str | None = None,
    ) -> NodeResult:
        node = self.nodes[node_id]
        spec = self.registry.get(node.tool) if node.tool in self.registry else None
        result = NodeResult.model_construct(
            node_id=node_id,
            tool=node.tool,
            status=status,
            round=self.round,
            tool_version=None if spec is None else spec.version,
            finished_at=self.scheduler._wall_clock(),
            success_condition=node.success_condition,
            error=error.structured(),
            fallback_for=fallback_for,
        )
        result.summary = summarize_result(result, max_chars=self.scheduler.config.summary_chars)
        return result

    async def _answered(
        self,
        node: PlanNode,
        spec: ToolSpec,
        json_args: dict[str, Any],
        input_hash: str,
        answer: ToolAnswer,
        fallback_for: str | None,
    ) -> NodeResult:
        """The result of a call the caller answered: its output (checked against the node's success
        condition) or the error it reported."""
        error = answer.error
        passed: bool | None = None
        if error is None and node.success_condition is not None:
            outcome = await self.executor.conditions.check(
                node.success_condition, answer.output, max_chars=self.scheduler.config.max_condition_chars
            )
            passed = outcome.passed
            error = None if outcome.error is None else outcome.error.structured()
        now = self.scheduler._wall_clock()
        result = NodeResult.model_construct(
            node_id=node.id,
            tool=spec.name,
            status="succeeded" if error is None else "failed",
            round=self.round,
            tool_version=spec.version,
            attempts=1,
            started_at=answer.answered_at or now,
            finished_at=now,
            duration_ms=0.0,
            args=json_args,
            input_hash=input_hash,
            output=answer.output if error is None else None,
            output_sha256=sha256_json(answer.output) if error is None else None,
            success_condition=node.success_condition,
            condition_passed=passed,
            error=error,
            fallback_for=fallback_for,
        )
        result.summary = summarize_result(result, max_chars=self.scheduler.config.summary_chars)
        return result

    async def _reused(self, node: PlanNode, previous: NodeResult, fallback_for: str | None) -> NodeResult:
        error: dict[str, Any] | None = None
        passed: bool | None = None
        if node.success_condition is not None:
            outcome = await self.executor.conditions.check(
                node.success_condition, previous.output, max_chars=self.scheduler.config.max_condition_chars
            )
            passed = outcome.passed
            error = None if outcome.error is None else outcome.error.structured()
        now = self.scheduler._wall_clock()
        result = previous.model_copy(
            update={
                "node_id": node.id,
                "round": self.round,
                "status": "succeeded" if error is None else "failed",
                "attempts": 0,
                "started_at": now,
                "finished_at": now,
                "duration_ms": 0.0,
                "success_condition": node.success_condition,
                "condition_passed": passed,
                "error": error,
                "fallback_for": fallback_for,
                "reused_from": previous.reused_from or f"r{previous.round}/{previous.node_id}",
            }
        )
        result.summary = summarize_result(result, max_chars=self.scheduler.config.summary_chars)
        return result

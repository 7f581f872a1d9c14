"""Execute one ready node: concurrency slots, per-attempt timeout, retries with backoff, circuit
breaker, success condition, and the resulting `NodeResult` with its observation metadata."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

from contract.plan import PlanNode
from executors.breaker import BreakerBoard, BreakerState, counts_against_tool
from executors.condition_worker import ConditionEvaluator
from executors.conditions import ConditionOutcome
from executors.config import ExecutorConfig
from executors.context import run_id, run_tenant
from executors.errors import CircuitOpenError, ExecutorError, ToolOutputError, ToolTimeoutError, as_tool_error
from executors.observation import NodeResult, sha256_json, summarize_result
from executors.registry import ToolSpec
from executors.sources.tool_source import CallContext, call_scope, current_call_context

Sleep = Callable[[float], Awaitable[Any]]


class SchedulerObserver(Protocol):
    """Hooks the scheduler awaits; `node_settled` must make the result durable before returning, and
    may return the result as committed (which then replaces the scheduler's own)."""

    async def node_started(self, node: PlanNode, round_: int) -> None: ...

    async def node_retrying(
        self, node: PlanNode, round_: int, attempt: int, delay_s: float, error: dict[str, Any]
    ) -> None: ...

    async def node_settled(self, result: NodeResult) -> NodeResult | None: ...


class ToolCallObserver(Protocol):
    """Per-tool operations as they happen (the gateway's Prometheus series): every attempt with its
    outcome (`ok` or the error's kind) and duration, every retry, every change of a breaker's state."""

    def call_finished(self, spec: ToolSpec, outcome: str, seconds: float) -> None: ...

    def call_retried(self, spec: ToolSpec) -> None: ...

    def breaker_changed(self, spec: ToolSpec, state: BreakerState) -> None: ...


class NullObserver:
    """Observer that records nothing (benchmarks, simple tests)."""

    async def node_started(self, node: PlanNode, round_: int) -> None:
        return None

    async def node_retrying(
        self, node: PlanNode, round_: int, attempt: int, delay_s: float, error: dict[str, Any]
    ) -> None:
        return None

    async def node_settled(self, result: NodeResult) -> NodeResult | None:
        return None


class ConcurrencyLimits:
    """Global, per-class and slow-tool semaphores; acquired always in the same order (no deadlock)."""

    def __init__(self, config: ExecutorConfig) -> None:
        self._global = asyncio.Semaphore(config.max_parallel)
        self._classes = {name: asyncio.Semaphore(limit) for name, limit in config.class_limits.items()}
        self._slow = asyncio.Semaphore(1)

    @asynccontextmanager
    async def slot(self, spec: ToolSpec) -> AsyncIterator[None]:
        order = [self._classes.get(spec.concurrency_class), self._slow if spec.slow else None, self._global]
        acquired: list[asyncio.Semaphore] = []
        try:
            for semaphore in order:
                if semaphore is not None:
                    await semaphore.acquire()
                    acquired.append(semaphore)
            yield
        finally:
            for semaphore in reversed(acquired):
                semaphore.release()


class RetryPolicy:
    """Exponential backoff with jitter: base·2^(n-1)·(1 + jitter·U[0,1)), capped at max."""

    def __init__(self, config: ExecutorConfig, rng: random.Random) -> None:
        self._base = config.backoff_base_s
        self._max = config.backoff_max_s
        self._jitter = config.backoff_jitter
        self._rng = rng

    def delay(self, failed_attempts: int) -> float:
        raw = self._base * (2 ** (failed_attempts - 1))
        return min(self._max, raw * (1.0 + self._jitter * self._rng.random()))


class NodeExecutor:
    """Runs one node's tool to a final `NodeResult` (never raises, except on cancellation)."""

    def __init__(
        self,
        config: ExecutorConfig,
        limits: ConcurrencyLimits,
        breakers: BreakerBoard,
        retry: RetryPolicy,
        *,
        sleep: Sleep,
        wall_clock: Callable[[], float],
        monotonic: Callable[[], float],
        tool_calls: ToolCallObserver | None = None,
    ) -> None:
        self._tool_calls = tool_calls
        self._config = config
        self._limits = limits
        self._breakers = breakers
        self._retry = retry
        self._sleep = sleep
        self._wall_clock = wall_clock
        self._monotonic = monotonic
        self.conditions = ConditionEvaluator()  # success conditions: in a worker process

    async def execute(
        self,
        node: PlanNode,
        spec: ToolSpec,
        kwargs: dict[str, Any],
        json_args: dict[str, Any],
        input_hash: str,
        *,
        round_: int,
        observer: SchedulerObserver,
        fallback_for: str | None,
    ) -> NodeResult:
        breaker = self._breakers.for_tool(spec.breaker_key)
        watch = self._tool_calls
        max_attempts = spec.retries or self._config.default_max_attempts
        timeout_s = spec.timeout_s or self._config.default_timeout_s
        attempts = 0
        started_at: float | None = None
        t0 = self._monotonic()
        output: Any = None
        error: ExecutorError | None = None
        while True:
            try:
                breaker.check(spec.name)
            except CircuitOpenError as exc:
                error = exc
                if watch is not None:
                    watch.call_finished(spec, exc.kind, 0.0)
                break
            attempts += 1
            async with self._limits.slot(spec):
                if started_at is None:
                    started_at = self._wall_clock()
                    t0 = self._monotonic()
                attempt_t0 = self._monotonic()
                try:  # the call knows its run, round and node (a remote call's idempotency key)
                    outer = current_call_context()  # a caller outside a driver may have set the run
                    tenant, run = run_tenant() or outer.tenant, run_id() or outer.run_id
                    context = CallContext(tenant=tenant, run_id=run, round=round_, node_id=node.id)
                    async with asyncio.timeout(timeout_s):
                        with call_scope(context):
                            output = await spec.invoke(kwargs)
                    error = None
                except TimeoutError:
                    error = ToolTimeoutError(f"{spec.name} did not answer within {timeout_s:g} s")
                except Exception as exc:  # the tool boundary: every exception becomes a typed error
                    error = as_tool_error(exc)
            before = breaker.state
            if watch is not None:
                watch.call_finished(spec, "ok" if error is None else error.kind, self._monotonic() - attempt_t0)
            if error is None:
                breaker.record_success()
            elif counts_against_tool(error):
                breaker.record_failure()
            if watch is not None and breaker.state != before:
                watch.breaker_changed(spec, breaker.state)
            if error is None:
                break
            if not error.retryable or attempts >= max_attempts:
                break
            # a service that said when to come back (Retry-After) is not asked again sooner
            delay = max(self._retry.delay(attempts), getattr(error, "retry_delay_s", None) or 0.0)
            if watch is not None:
                watch.call_retried(spec)
            await observer.node_retrying(node, round_, attempts, delay, error.structured())
            await self._sleep(delay)
        outcome: ConditionOutcome | None = None
        if error is None and node.success_condition is not None:  # evaluated off the event loop
            outcome = await self.conditions.check(
                node.success_condition, output, max_chars=self._config.max_condition_chars
            )
        return self._result(
            node, spec, json_args, input_hash, round_, attempts, started_at, t0, output, error, fallback_for, outcome
        )

    def _result(
        self,
        node: PlanNode,
        spec: ToolSpec,
        json_args: dict[str, Any],
        input_hash: str,
        round_: int,
        attempts: int,
        started_at: float | None,
        t0: float,
        output: Any,
        error: ExecutorError | None,
        fallback_for: str | None,
        outcome: ConditionOutcome | None,
    ) -> NodeResult:
        condition_passed: bool | None = None
        output_sha: str | None = None
        if error is None:
            try:
                output_sha = sha256_json(output)
            except (TypeError, ValueError) as exc:
                error, output = ToolOutputError(f"{spec.name}: output is not JSON: {exc}"), None
        if error is None and outcome is not None:
            condition_passed = outcome.passed
            error = outcome.error
        result = NodeResult.model_construct(  # trusted values: skip re-validating the output
            node_id=node.id,
            tool=spec.name,
            status="succeeded" if error is None else "failed",
            round=round_,
            tool_version=spec.version,
            attempts=attempts,
            started_at=started_at,
            finished_at=self._wall_clock(),
            duration_ms=round((self._monotonic() - t0) * 1000.0, 3),
            args=json_args,
            input_hash=input_hash,
            output=output if output_sha is not None else None,
            output_sha256=output_sha,
            success_condition=node.success_condition,
            condition_passed=condition_passed,
            error=None if error is None else error.structured(),
            fallback_for=fallback_for,
        )
        result.summary = summarize_result(result, max_chars=self._config.summary_chars)
        return result

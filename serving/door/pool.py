"""The door's worker pool: checks that stay expensive after the size bounds run here, off the event loop.

`DoorPool.run(tenant, function, *args)` waits for the tenant's turn (serving/door/fair.py: at most
`door.per_tenant` running jobs per tenant, bounded waiting, round robin between tenants), then runs
the function in one of `door.workers` worker processes (serving/door/workers.py) at a lower CPU
priority, within `door.deadline_s` of waiting and running (a worker's start-up on first use is not
counted). Past the deadline the request gets a 503 with
Retry-After and the worker is killed; a killed or crashed worker is replaced at once, in the
background, so the next request finds a warm one. The workers start together on first use (about
1–3 s here: small requests never need them, so a gateway that only sees those never starts them).

`door.kind: thread` runs the same jobs in threads instead (no process start, but pure-Python checks
then compete with the event loop for the GIL, and a job past its deadline cannot be stopped).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

from serving.door.fair import FairShare
from serving.door.workers import START_TIMEOUT_S, Answer, ProcessWorker, _answer
from serving.errors import PlanstackError
from serving.metrics import GatewayMetrics
from serving.settings import DoorSettings

logger = logging.getLogger("planstack.door")
T = TypeVar("T")
PRELOAD = (  # what a worker imports before it says ready: the jobs, and the request models bodies are parsed into
    "serving.door.jobs",
    "serving.plans.protocol",
    "serving.runs.protocol",
    "serving.protocol",
    "serving.responses.protocol",
    "serving.steering",
    "serving.demonstrations",
    "serving.toolsets.checks",
    "serving.toolsets.openapi_import",
    "openapi_spec_validator.validation",  # imported by the first OpenAPI import otherwise (inside its deadline)
)


class CheckTimeoutError(PlanstackError):
    """The request's checks did not finish within `door.deadline_s` (load, or a request at the limits)."""

    status = 503
    type = "service_unavailable"
    code = "request_check_timeout"
    retryable = True


class CheckUnavailableError(CheckTimeoutError):
    """The worker running the request's checks stopped (it is replaced at once)."""

    code = "request_check_unavailable"


class DoorPool:
    def __init__(self, settings: DoorSettings, metrics: GatewayMetrics | None = None) -> None:
        self.settings = settings
        self._metrics = metrics
        self.share = FairShare(
            settings.workers,
            settings.per_tenant,
            max_waiting=settings.max_waiting,
            max_waiting_per_tenant=settings.max_waiting_per_tenant,
        )
        self._ready: asyncio.Queue[ProcessWorker | None] | None = None  # None: a worker failed to start
        self._workers: set[ProcessWorker] = set()  # started or starting
        self._starting: set[asyncio.Task[None]] = set()
        self._threads: ThreadPoolExecutor | None = None

    def worker_pids(self) -> list[int]:
        return [pid for worker in self._workers if (pid := worker.pid) is not None]

    def count(self, outcome: str) -> None:
        if self._metrics is not None:
            self._metrics.door_checks.labels(outcome).inc()

    async def run(self, tenant: str, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` in a worker on `tenant`'s share; its exceptions are raised here."""
        deadline = time.monotonic() + self.settings.deadline_s
        try:
            await self.share.acquire(tenant, self.settings.deadline_s)
        except TimeoutError:
            self.count("timeout")
            raise self._timeout() from None
        except PlanstackError:
            self.count("busy")
            raise
        try:
            status, value = await self._call(function, args, deadline)
        finally:
            self.share.release(tenant)
        self.count({"ok": "pool", "raise": "pool", "refused": "pool"}.get(status, status))
        return cast(T, _unpack(status, value, self))

    def _timeout(self) -> CheckTimeoutError:
        return CheckTimeoutError(
            f"the checks of this request did not finish within {self.settings.deadline_s:g} s; retry shortly",
            retry_after_s=1,
        )

    async def _call(self, function: Callable[..., Any], args: tuple[Any, ...], deadline: float) -> Answer:
        if self.settings.kind == "thread":
            return await self._call_in_thread(function, args, deadline)
        waited = time.monotonic()
        try:
            worker = await asyncio.wait_for(self._worker(), START_TIMEOUT_S)
        except TimeoutError:
            worker = None
        if worker is None:
            return "crashed", "no door worker could be started"
        deadline += time.monotonic() - waited  # a worker's start-up (first use only) is not the request's
        call = asyncio.ensure_future(asyncio.to_thread(worker.call, function, args, deadline - time.monotonic()))
        try:
            answer = await asyncio.shield(call)
        except asyncio.CancelledError:  # the client went away: the worker is free once its job ends
            call.add_done_callback(lambda done: self._settle(worker, _answer_of(done)))
            raise
        self._settle(worker, answer)
        return answer

    def _settle(self, worker: ProcessWorker, answer: Answer) -> None:
        """Back to the idle workers, or (killed, crashed) replaced by a fresh one starting now."""
        if worker not in self._workers:
            return  # the pool was closed meanwhile
        if answer[0] in ("timeout", "crashed"):
            self._workers.discard(worker)
            self._spawn()  # a warm replacement for the next request
        elif self._ready is not None:
            self._ready.put_nowait(worker)

    async def _call_in_thread(self, function: Callable[..., Any], args: tuple[Any, ...], deadline: float) -> Answer:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(self.settings.workers, thread_name_prefix="planstack-door")
        future = asyncio.wrap_future(self._threads.submit(_answer, function, args))
        try:
            return await asyncio.wait_for(future, max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            return "timeout", 0.0  # the thread runs on: threads cannot be stopped

    async def _worker(self) -> ProcessWorker | None:
        if self._ready is None:
            self._ready = asyncio.Queue()
        if self._ready.empty() and len(self._workers) < self.settings.workers:
            for _ in range(self.settings.workers - len(self._workers)):  # all of them: the first use warms the pool
                self._spawn()
        return await self._ready.get()

    def _spawn(self) -> None:
        worker = ProcessWorker(nice=self.settings.nice, preload=PRELOAD)
        self._workers.add(worker)
        task = asyncio.get_running_loop().create_task(self._start(worker))
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    async def _start(self, worker: ProcessWorker) -> None:
        started: ProcessWorker | None = worker
        try:
            await asyncio.to_thread(worker.start)
        except RuntimeError:
            logger.error("a door worker failed to start; the next request tries again")
            self._workers.discard(worker)
            started = None  # tells one waiter at once, instead of letting it wait out the start timeout
        if self._ready is None:
            self._ready = asyncio.Queue()
        self._ready.put_nowait(started)

    def close(self) -> None:
        for task in list(self._starting):
            task.cancel()
        for worker in list(self._workers):
            worker.close()
        self._workers.clear()
        self._ready = None
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None


def _answer_of(done: asyncio.Future[Answer]) -> Answer:
    if done.cancelled() or done.exception() is not None:
        return "crashed", "the call did not finish"
    return done.result()


def _rebuilt(kind: type[PlanstackError], message: str, fields: dict[str, Any]) -> PlanstackError:
    """The gateway error a worker raised, from its fields. A class whose constructor takes other
    arguments (OpenApiInvalidError takes its problems) is built through the root's constructor."""
    try:
        return kind(message, **fields)
    except TypeError:
        error = kind.__new__(kind)
        PlanstackError.__init__(error, message, **fields)
        return error


def _unpack(status: str, value: Any, pool: DoorPool) -> Any:
    """A worker's answer as a value, or the exception it stands for."""
    if status == "ok":
        return value
    if status == "raise":
        raise value
    if status == "refused":
        kind, message, fields = value
        raise _rebuilt(kind, message, fields)
    if status == "timeout":
        raise pool._timeout()
    if status == "crashed":
        raise CheckUnavailableError("the worker checking this request stopped; retry", retry_after_s=1)
    raise RuntimeError(f"a door check failed: {value}")

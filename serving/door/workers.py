"""Killable worker processes for the door's checks (serving/door/pool.py).

A `ProcessWorker` is one spawned child at a lower CPU priority that runs jobs sent over a pipe, one
at a time: `(function, args)` in, `("ok", value)` / `("raise", exception)` / `("refused", fields of a
gateway error)` / `("failed", text)` out. Functions travel by reference (module and name), so a job
is any module-level function the child can import. The parent waits for an answer up to a deadline;
past it the child is killed, so a runaway check costs nothing beyond its deadline.

Measured on this 2-core machine (benchmarks/results/door_pool.md, `python -m benchmarks.door_pool`):
four requests at once, each meta-validating a 710 KB catalog of 128 tools, in a *thread* pool held
`/health` at p50 104 ms, p99 490 ms, worst 522 ms (the GIL: every event-loop wake-up waits behind
the busy threads); in these processes at nice 10: p50 5.2 ms, p99 36 ms, worst 57 ms.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from serving.errors import PlanstackError

logger = logging.getLogger("planstack.door")

START_TIMEOUT_S = 120.0
Answer = tuple[str, Any]


def _error_fields(exc: PlanstackError) -> tuple[type[PlanstackError], str, dict[str, Any]]:
    fields = {"param": exc.param, "code": exc.code, "hint": exc.hint, "retry_after_s": exc.retry_after_s}
    return type(exc), exc.message, fields


def _answer(function: Callable[..., Any], args: tuple[Any, ...]) -> Answer:
    try:
        return "ok", function(*args)
    except PlanstackError as exc:  # a gateway error (400, 413...): its fields, since its pickling drops them
        return "refused", _error_fields(exc)
    except Exception as exc:  # noqa: BLE001 - anything else is the caller's to raise
        try:
            pickle.dumps(exc)
        except Exception:  # noqa: BLE001 - an exception that cannot cross the pipe
            return "failed", f"{type(exc).__name__}: {exc}"[:500]
        return "raise", exc


def _child_main(conn: Connection, nice: int, preload: tuple[str, ...]) -> None:  # pragma: no cover - child
    """Import what the jobs need, say ready, then answer jobs until the pipe closes."""
    import gc
    import importlib

    if nice:
        os.nice(nice)  # the gateway's event loop keeps the CPU when both want it
    for module in preload:
        importlib.import_module(module)
    gc.freeze()  # what the imports built is never garbage: full collections scan only the jobs' objects
    conn.send(("ready", None))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return  # the gateway is gone
        if job is None:
            return
        function, args = job
        answer = _answer(function, args)
        try:
            conn.send(answer)
        except Exception as exc:  # noqa: BLE001 - an answer that cannot be pickled
            conn.send(("failed", f"the answer could not be sent back: {type(exc).__name__}"))


class ProcessWorker:
    """One child process; `call` blocks (run it in a thread) and is used by one job at a time."""

    def __init__(self, *, nice: int = 10, preload: tuple[str, ...] = ()) -> None:
        self._nice = nice
        self._preload = preload
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def start(self) -> ProcessWorker:
        """Spawn the child and wait until it has imported its modules (blocking)."""
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        proc = context.Process(
            target=_child_main, args=(child, self._nice, self._preload), daemon=True, name="planstack-door"
        )
        proc.start()
        child.close()
        try:
            ready = parent.poll(START_TIMEOUT_S) and parent.recv()[0] == "ready"
        except (EOFError, OSError):
            ready = False
        if not ready:
            proc.kill()
            proc.join(timeout=5)
            parent.close()
            raise RuntimeError("a door worker process failed to start")
        self._proc, self._conn = proc, parent
        return self

    def call(self, function: Callable[..., Any], args: tuple[Any, ...], timeout_s: float) -> Answer:
        """("ok" | "raise" | "refused" | "failed", value), or ("timeout", seconds) after which the child
        has been killed, or ("crashed", text) when it died under the job."""
        with self._lock:
            conn = self._conn
            if conn is None or not self.alive:
                return "crashed", "the worker is not running"
            started = time.monotonic()
            try:
                conn.send((function, args))
                if conn.poll(max(0.0, timeout_s)):
                    status, value = conn.recv()
                    return status, value
            except (EOFError, OSError, BrokenPipeError) as exc:
                logger.warning("a door worker (pid %s) died during a job: %s", self.pid, type(exc).__name__)
                self._kill()
                return "crashed", "the worker stopped"
            self._kill()  # still working: stop it rather than let it eat the CPU
            return "timeout", time.monotonic() - started

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(timeout=5)
        if self._conn is not None:
            self._conn.close()
        self._proc, self._conn = None, None

    def close(self) -> None:
        """Stop the child at once (a job in flight answers "crashed"): checks keep no state to save."""
        self._kill()

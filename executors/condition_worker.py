"""Success conditions evaluated in a worker process at low priority, never in the gateway's process.

A condition is cheap by construction (executors/conditions.py bounds the language and the
evaluation), but "cheap" is still up to a few hundred milliseconds of pure-Python work on a large
output. In a thread of the gateway that work competes with the event loop for the GIL and, on a
busy machine, for the CPU: measured here, `/health` went from ~5 ms to 100–470 ms while worst-case
conditions ran in a thread. So `ConditionEvaluator` hands each condition and its output to one
worker process started as `nice -n 10 python -m executors.condition_worker` (it imports only
jmespath and this package, so it starts in a fraction of a second, and all of it, start-up
included, runs below the gateway's priority). Requests and answers are length-prefixed pickles
over the worker's stdin/stdout, written and read by one thread of the gateway (the pipe I/O
releases the GIL); a worker that does not answer in time is killed, and one that died is replaced.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import select
import shutil
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from executors.conditions import DEFAULT_MAX_CHARS, EVAL_TIMEOUT_S, ConditionOutcome, check_condition
from executors.errors import InvalidCondition

WORKER_WAIT_S = EVAL_TIMEOUT_S + 8.0  # the interpreter stops itself at 2 s; this also covers a cold start
NICENESS = 10
_SMALL_VALUE = 200
_HEADER = struct.Struct("!Q")
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def _check_in_worker(expression: str, output: Any, max_chars: int) -> ConditionOutcome:
    outcome = check_condition(expression, output, max_chars=max_chars)
    value = outcome.value
    if isinstance(value, (str, list, dict)) and len(value) > _SMALL_VALUE:
        value = None  # the verdict and its message are what the scheduler keeps, not a large result
    return ConditionOutcome(outcome.expression, outcome.passed, value, outcome.error)


def _read_frame(stream: IO[bytes]) -> bytes | None:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    return stream.read(_HEADER.unpack(header)[0])


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def serve() -> None:  # pragma: no cover - runs in the worker process
    """The worker: evaluate (expression, output, max_chars) requests from stdin until it closes."""
    if shutil.which("nice") is None:
        os.nice(NICENESS)
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    while (frame := _read_frame(requests)) is not None:
        expression, output, max_chars = pickle.loads(frame)  # noqa: S301 - our own gateway's request
        _write_frame(answers, pickle.dumps(_check_in_worker(expression, output, max_chars)))


class ConditionEvaluator:
    """One worker process (started on first use) for the conditions of a scheduler. `check` never
    raises (except on cancellation): a condition that takes too long, or a worker that dies, is an
    `InvalidCondition` outcome."""

    def __init__(self) -> None:
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="planstack-condition")
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None

    async def check(self, expression: str, output: Any, *, max_chars: int = DEFAULT_MAX_CHARS) -> ConditionOutcome:
        request = (expression, output, max_chars)
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(self._io, self._exchange, request)
        if isinstance(answer, ConditionOutcome):
            return answer
        return ConditionOutcome(expression, passed=False, error=InvalidCondition(f"success_condition {answer}"))

    def _exchange(self, request: tuple[str, Any, int]) -> ConditionOutcome | str:
        """One request and its answer (or why there is none), in the I/O thread."""
        payload = pickle.dumps(request)
        with self._lock:
            for attempt in (1, 2):  # a worker that died since the last call is replaced once
                proc = self._worker()
                try:
                    assert proc.stdin is not None and proc.stdout is not None
                    _write_frame(proc.stdin, payload)
                    deadline = time.monotonic() + WORKER_WAIT_S
                    ready, _, _ = select.select([proc.stdout], [], [], max(deadline - time.monotonic(), 0))
                    if not ready:
                        self._stop(proc)
                        return f"took longer than {EVAL_TIMEOUT_S:g} s and was stopped"
                    frame = _read_frame(proc.stdout)
                    if frame is not None:
                        answer: ConditionOutcome = pickle.loads(frame)  # noqa: S301 - our own worker's answer
                        return answer
                except (BrokenPipeError, OSError, EOFError, pickle.UnpicklingError):
                    pass
                self._stop(proc)
                if attempt == 2:
                    return "could not be evaluated: the condition worker stopped"
        return "could not be evaluated"

    def _worker(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            nice = shutil.which("nice")
            argv = [sys.executable, "-m", "executors.condition_worker"]
            paths = (str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH", ""))
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}  # this checkout's code
            self._proc = subprocess.Popen(  # noqa: S603 - fixed argv
                [nice, "-n", str(NICENESS), *argv] if nice else argv,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            )  # fmt: skip
        return self._proc

    def _stop(self, proc: subprocess.Popen[bytes]) -> None:
        proc.kill()
        proc.wait(timeout=5)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        if self._proc is proc:
            self._proc = None

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._stop(self._proc)
        self._io.shutdown(wait=False)


if __name__ == "__main__":  # pragma: no cover
    serve()

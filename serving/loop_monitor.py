"""How long the gateway's event loop runs without yielding, measured on the loop's own thread.

A timer on the loop ticks every `TICK_S`. Between two ticks the loop ran everything that was ready;
the CPU time its thread spent in that stretch (`time.thread_time`) is how long the gateway's own code
kept every other request waiting. That figure does not grow when the machine is busy: a loop that the
operating system deschedules, or that waits for another process, accrues no CPU time, so a stall of
the gateway's own making is told apart from a loaded host's (whose cost shows in the wall-clock lag,
recorded beside it). Both go to the gateway's metrics (`planstack_event_loop_busy_seconds`,
`planstack_event_loop_lag_seconds`).

Not seen here: a worker thread of the gateway holding the GIL for long (the loop's thread waits without
CPU time). The door's heavy work runs in worker processes for that reason (serving/door/workers.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Protocol

TICK_S = 0.02  # 50 wake-ups a second: a stall of 20 ms or more is seen, at no measurable cost


class LoopObserver(Protocol):
    def loop_stretch(self, busy_s: float, lag_s: float) -> None: ...


class LoopMonitor:
    """Ticks on the running loop; each tick reports the stretch since the previous one."""

    def __init__(self, observer: LoopObserver, tick_s: float = TICK_S) -> None:
        self._observer = observer
        self._tick_s = tick_s
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._cpu = 0.0

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._cpu = time.thread_time()
        self._due = loop.time() + self._tick_s
        self._handle = loop.call_at(self._due, self._tick, loop)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        now, cpu = loop.time(), time.thread_time()
        self._observer.loop_stretch(cpu - self._cpu, max(0.0, now - self._due))
        self._cpu = cpu
        self._due = now + self._tick_s
        self._handle = loop.call_at(self._due, self._tick, loop)


@contextlib.asynccontextmanager
async def monitored_loop(observer: LoopObserver, tick_s: float = TICK_S) -> AsyncIterator[LoopMonitor]:
    monitor = LoopMonitor(observer, tick_s)
    monitor.start()
    try:
        yield monitor
    finally:
        monitor.stop()

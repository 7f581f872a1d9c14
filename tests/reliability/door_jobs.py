"""Jobs and a fake compile worker for the door's own tests: module-level (a spawned worker imports them
by name) and light to import.

- `started_sleeping(seconds)`: when the job started (wall clock), after sleeping `seconds` (no CPU).
- `compile_child`: a stand-in for the schema guard's compile worker (serving/schema_guard.py
  `_worker_main`, same protocol, no model): a schema text containing "sleep" waits 3 s without using
  the CPU (a busy machine), one containing "spin" burns the CPU for 3 s (a schema too slow to compile
  whatever the load), anything else compiles at once to an index of 1 KiB.
"""

from __future__ import annotations

import time
from multiprocessing.connection import Connection


def started_sleeping(seconds: float) -> float:
    started = time.time()
    time.sleep(seconds)
    return started


def raise_value_error(message: str) -> None:
    raise ValueError(message)


def compile_child(conn: Connection, model_dir: str, backend: str) -> None:  # pragma: no cover - child process
    conn.send(("ready", 0.0, "", 0))
    while True:
        text = conn.recv()
        if text is None:
            return
        started = time.perf_counter()
        if "sleep" in text:
            time.sleep(3)
        elif "spin" in text:
            while time.perf_counter() - started < 3:
                pass
        conn.send(("ok", time.perf_counter() - started, "", 1024))

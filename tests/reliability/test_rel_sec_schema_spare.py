"""Issue 19, item 5: a schema compile that times out no longer makes the next tenant pay the worker's
restart under the global lock (a warm spare takes over at once), and a timeout verdict taken on a busy
machine is not remembered for everyone (only a compile that burned its whole budget of CPU is).

The compile worker here is tests/reliability/door_jobs.compile_child: the guard's real worker
protocol in a real spawned process, without the model (a "sleep" schema waits without CPU, as a
compile starved by load does; a "spin" schema burns CPU, as a schema too slow to compile does)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from serving.errors import SchemaCheckUnavailableError, SchemaTooComplexError
from serving.metrics import GatewayMetrics
from serving.schema_guard import CompileWorker, SchemaGuard
from serving.settings import SchemaGuardSettings
from tests.reliability.door_jobs import compile_child

pytestmark = pytest.mark.timeout(300)


def wait_for_spare(worker: CompileWorker) -> int:
    deadline = time.monotonic() + 120
    while worker.spare_pid is None:
        assert time.monotonic() < deadline, "no spare worker started"
        time.sleep(0.05)
    return worker.spare_pid


def schema(word: str) -> dict[str, Any]:
    return {"type": "object", "properties": {word: {"type": "string"}}}


def outcome(metrics: GatewayMetrics, name: str) -> float:
    return metrics.registry.get_sample_value("planstack_schema_checks_total", {"outcome": name}) or 0.0


def test_after_a_timeout_the_warm_spare_answers_the_next_compile(tmp_path: Path) -> None:
    worker = CompileWorker(tmp_path, "outlines", target=compile_child)
    try:
        assert worker.compile('{"first": 1}', 5)[0] == "ok"
        first, spare = worker.pid, wait_for_spare(worker)
        assert spare != first
        status, *_ = worker.compile('{"spin": 1}', 0.5)
        assert status == "timeout" and worker.pid is None
        started = time.perf_counter()
        assert worker.compile('{"next": 1}', 5)[0] == "ok"
        assert worker.pid == spare, "the next compile ran on the spare that was already warm"
        assert time.perf_counter() - started < 2.5  # no restart paid: a start takes longer than the job
        assert wait_for_spare(worker) not in (first, spare)  # and a new spare is warming behind it
    finally:
        worker.close()


def test_only_verdicts_that_do_not_depend_on_load_are_remembered(tmp_path: Path) -> None:
    worker = CompileWorker(tmp_path, "outlines", target=compile_child)
    metrics = GatewayMetrics()
    guard = SchemaGuard(SchemaGuardSettings(compile_timeout_s=0.5), "outlines", metrics, worker)

    async def check(word: str) -> str:
        try:
            await guard.check(schema(word), tenant="a")
        except SchemaCheckUnavailableError as exc:
            return f"503 {exc.code}"
        except SchemaTooComplexError as exc:
            return f"400 {exc.code}"
        return "200"

    try:
        assert asyncio.run(check("warm")) == "200"
        wait_for_spare(worker)
        # starved of CPU (as under load): a 503 to retry, compiled again next time
        assert asyncio.run(check("sleep")) == "503 schema_check_unavailable"
        wait_for_spare(worker)
        assert asyncio.run(check("sleep")) == "503 schema_check_unavailable"
        assert outcome(metrics, "timeout_busy") == 2 and outcome(metrics, "cached") == 0
        # burned its budget of CPU: the schema's own verdict, remembered
        wait_for_spare(worker)
        assert asyncio.run(check("spin")) == "400 schema_too_complex"
        assert asyncio.run(check("spin")) == "400 schema_too_complex"
        assert outcome(metrics, "timeout") == 1 and outcome(metrics, "cached") == 1
    finally:
        guard.close()

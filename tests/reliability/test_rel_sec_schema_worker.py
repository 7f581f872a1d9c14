"""The schema compile worker can die without breaking `json_schema` requests for good,
and a flood of new schemas cannot queue without bound in front of it.

A real gateway in its own process, its real compile worker (outlines over the served model's
vocabulary), the fake upstream behind it. The worker is killed with SIGKILL, between requests and in
the middle of a compile."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.conftest import FAKE_MODEL, KEY_A, KEY_B
from tests.reliability.helpers import check_error_shape
from tests.reliability.sec_helpers import GatewayProcess, gateway_process, probe_during

pytestmark = [pytest.mark.fake_upstream, pytest.mark.slow, pytest.mark.timeout(600)]
FLOOD_PER_TENANT = 8  # 16 new schemas at once against 4 waiting places, 2 per tenant


def schema(tag: str, fields: int = 3, max_length: int = 12) -> dict[str, Any]:
    """A distinct schema per tag (so no verdict is cached); bounded strings make it slower to compile."""
    props = {f"{tag}_{i}": {"type": "string", "maxLength": max_length} for i in range(fields)}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def chat(client: httpx.Client, body_schema: dict[str, Any]) -> httpx.Response:
    body = {
        "model": FAKE_MODEL,
        "messages": [{"role": "user", "content": "fill it"}],
        "max_tokens": 5,
        "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": body_schema}},
    }
    return client.post("/v1/chat/completions", json=body)


def compile_worker_pids(gateway: GatewayProcess) -> set[int]:
    """The gateway's compile workers, the one compiling and its warm spare: forked by the forkserver the
    gateway starts (serving/schema_guard.py `_worker_context`), or spawned where there is none. Not
    the forkserver itself, nor multiprocessing's resource tracker; no door worker runs in these tests:
    their bodies are small."""
    found = set()
    for child in psutil.Process(gateway.proc.pid).children(recursive=True):
        cmdline = " ".join(child.cmdline())
        if "multiprocessing" not in cmdline or "resource_tracker" in cmdline:
            continue
        if "forkserver" in cmdline and child.ppid() == gateway.proc.pid:
            continue  # the forkserver: it only forks the workers
        found.add(int(child.pid))
    assert found, "no compile worker is running"
    return found


def kill_compile_workers(gateway: GatewayProcess) -> set[int]:
    """SIGKILL every compile worker, the spare too (so the request after it must start a fresh one)."""
    pids = compile_worker_pids(gateway)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    return pids


@pytest.fixture
def guarded(tmp_path: Path, prepared_model_dir: Path) -> Iterator[GatewayProcess]:
    env = {"PLANSTACK_SCHEMA_GUARD__COMPILE_TIMEOUT_S": "30"}
    with gateway_process(tmp_path, model_dir=prepared_model_dir, env=env) as gateway:
        yield gateway


def test_worker_killed_between_requests_is_restarted(guarded: GatewayProcess) -> None:
    with guarded.client(timeout=180) as client:
        assert chat(client, schema("first")).status_code == 200  # starts the worker
        killed = kill_compile_workers(guarded)
        time.sleep(0.5)
        started = time.perf_counter()
        after_kill = chat(client, schema("second"))
        print(
            f"\nfirst request after SIGKILL of the idle worker: {after_kill.status_code} in {time.perf_counter() - started:.1f} s"
        )
        check_error_shape(after_kill)
        assert after_kill.status_code in (200, 503), after_kill.text
        if after_kill.status_code == 503:
            assert after_kill.json()["error"]["code"] == "schema_check_unavailable"
        again = chat(client, schema("third"))
        assert again.status_code == 200, again.text
        assert not compile_worker_pids(guarded) & killed


def test_worker_killed_mid_compile_answers_that_request_then_recovers(guarded: GatewayProcess) -> None:
    with guarded.client(timeout=180) as client:
        assert chat(client, schema("warm")).status_code == 200
        answers: list[httpx.Response] = []
        slow = threading.Thread(target=lambda: answers.append(chat(client, schema("slow", fields=8, max_length=40))))
        slow.start()
        time.sleep(0.7)  # the slow schema is compiling now (8 bounded strings of 40: about 2 s here)
        kill_compile_workers(guarded)
        killed_at = time.perf_counter()
        slow.join(timeout=120)
        killed = answers[0]
        print(f"\nrequest whose compile was killed: {killed.status_code} after {time.perf_counter() - killed_at:.2f} s")
        check_error_shape(killed)
        assert killed.status_code == 503, killed.text
        assert killed.json()["error"]["code"] == "schema_check_unavailable" and killed.headers["retry-after"] == "1"
        assert chat(client, schema("next")).status_code == 200
        retried = chat(client, schema("slow", fields=8, max_length=40))  # the crash was not cached as a verdict
        assert retried.status_code in (200, 400), retried.text


def test_flood_of_new_schemas_is_bounded_and_health_stays_fast(tmp_path: Path, prepared_model_dir: Path) -> None:
    env = {
        "PLANSTACK_SCHEMA_GUARD__MAX_WAITING": "4",
        "PLANSTACK_SCHEMA_GUARD__MAX_WAITING_PER_TENANT": "2",
        "PLANSTACK_SCHEMA_GUARD__COMPILE_TIMEOUT_S": "30",  # a cold worker on a busy machine is slow
    }
    with gateway_process(tmp_path, model_dir=prepared_model_dir, env=env) as gateway:
        with gateway.client(timeout=180) as warm:
            assert chat(warm, schema("warm")).status_code == 200

        def flood(attempt: int) -> list[httpx.Response]:
            results: list[httpx.Response] = []
            lock = threading.Lock()

            def send(key: str, index: int) -> None:
                with gateway.client(key, timeout=180) as client:
                    response = chat(client, schema(f"flood{attempt}{key[-5:]}{index}", fields=8))
                with lock:
                    results.append(response)

            threads = [
                threading.Thread(target=send, args=(key, i)) for i in range(FLOOD_PER_TENANT) for key in (KEY_A, KEY_B)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=300)
            return results

        probe, floods = probe_during(gateway.url, flood)
        with gateway.client() as client:
            metrics = client.get("/metrics").text
    busy_total = 0
    for results in floods:
        statuses = sorted(r.status_code for r in results)
        assert len(results) == 2 * FLOOD_PER_TENANT and set(statuses) <= {200, 400, 429}, (
            statuses
        )  # 400: over budget on a busy machine
        assert all(r.json()["error"]["code"] == "schema_too_complex" for r in results if r.status_code == 400)
        busy = [r for r in results if r.status_code == 429]
        assert busy and all(r.headers.get("retry-after") for r in busy), statuses
        assert all(r.json()["error"]["code"] == "too_many_requests" for r in busy)
        assert len(results) - len(busy) >= 4  # the queue did its work: every waiter got a verdict
        busy_total += len(busy)
    assert f'planstack_schema_checks_total{{outcome="busy"}} {float(busy_total)}' in metrics
    last = sorted(r.status_code for r in floods[-1])
    print(
        f"\nflood of {2 * FLOOD_PER_TENANT} new schemas: {last.count(200)} x 200, {last.count(429)} x 429; /health {probe.report()}"
    )
    assert not probe.loop_stalls, f"/health during the flood: {probe.report()}"

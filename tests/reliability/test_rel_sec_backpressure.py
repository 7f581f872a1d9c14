"""Fair back-pressure for ALL engine traffic, through a real gateway (its own
process) in front of a FAKE upstream that stalls (bounded, loopback).

Tenant A floods chat and planner traffic (`/v1/chat/completions`, `/v1/plans`, the `planner` model)
at once: it gets exactly its share of the engine slots and 429 + Retry-After beyond it, tenant B
still gets slots during the flood, and the gateway's event loop never runs 200 ms at a stretch meanwhile
(its loop monitor's figure; `/health`, timed from a separate client, is reported beside it: see
tests/reliability/sec_helpers.py for why the wall clock is not the bound).
Without the per-tenant share (today's code) A's flood takes every slot and B gets 429s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import API_KEYS, FAKE_MODEL, KEY_A, KEY_B
from tests.fakes.upstream import FakeBehaviour, ServerThread, create_fake_upstream, free_port
from tests.reliability.helpers import check_error_shape
from tests.reliability.sec_helpers import HEALTH_BOUND_S, loop_counts

pytestmark = pytest.mark.fake_upstream

LIMIT, SHARE, FLOOD = 4, 2, 12
STALL_S = 1.5
REQUEST = "Flights Shanghai to Hangzhou on June 20 and the weather there."
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("/v1/chat/completions", {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}),
    ("/v1/plans", {"request": REQUEST}),
    ("/v1/chat/completions", {"model": "planner", "messages": [{"role": "user", "content": REQUEST}]}),
]


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def stalled_gateway(tmp_path: Path) -> Iterator[tuple[str, FakeBehaviour]]:
    behaviour = FakeBehaviour(delay_s=STALL_S)
    upstream = ServerThread(create_fake_upstream(FAKE_MODEL, behaviour)).start()
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PLANSTACK_HOME": str(tmp_path),
        "PLANSTACK_API_KEYS": API_KEYS,
        "PLANSTACK_SECRET": "backpressure-test-secret-000000",
        "PLANSTACK_ENGINE__PORT": str(upstream.port),
        "PLANSTACK_GATEWAY__MAX_CONCURRENT_UPSTREAM": str(LIMIT),
        "PLANSTACK_GATEWAY__MAX_CONCURRENT_UPSTREAM_PER_TENANT": str(SHARE),
        "PLANSTACK_PLANNER__MAX_RETRIES": "0",  # one engine call per plan
    }
    command = [sys.executable, "-m", "uvicorn", "--factory", "tests.reliability.env_gateway:app"]
    gateway = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"], cwd=REPO, env=env
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(url) or gateway.poll() is not None, "the gateway starts", timeout_s=60)
        assert gateway.poll() is None, "the gateway process exited during start-up"
        yield url, behaviour
    finally:
        gateway.terminate()
        gateway.wait(timeout=30)
        upstream.stop()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/health", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def start_health_probe(url: str) -> subprocess.Popen[str]:
    """`/health` polled every 50 ms by a client in its own process; its first probe is answered."""
    probe = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.health_probe", url, "0.05"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert probe.stdout is not None and probe.stdout.readline().startswith("200 ")  # warm, before the flood
    return probe


def stop_health_probe(probe: subprocess.Popen[str]) -> list[tuple[int, float]]:
    """(status, milliseconds) of every probe made since the first one."""
    probe.terminate()
    out, _ = probe.communicate(timeout=30)
    return [(int(status), float(ms)) for status, ms in (line.split() for line in out.splitlines())]


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        time.sleep(0.01)


def flood_once(
    url: str, behaviour: FakeBehaviour
) -> tuple[list[tuple[httpx.Response, float]], list[httpx.Response], list[tuple[int, float]]]:
    """Tenant A's flood with tenant B's two requests during it, /health probed from its own process."""
    behaviour.received.clear()

    def client(key: str) -> httpx.Client:
        return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)

    clients = [client(KEY_A) for _ in range(FLOOD)] + [client(KEY_B) for _ in range(2)]  # made before the flood

    def send(index: int) -> tuple[httpx.Response, float]:
        route, body = CALLS[index % len(CALLS)]
        started = time.perf_counter()
        response = clients[index].post(route, json=body)
        return response, time.perf_counter() - started

    probe = start_health_probe(url)
    try:
        with ThreadPoolExecutor(max_workers=FLOOD + 2) as pool:
            flood = [pool.submit(send, i) for i in range(FLOOD)]
            wait_for(lambda: len(behaviour.received) == SHARE, "tenant A holds its share of the slots")
            others = [pool.submit(send, FLOOD + i) for i in range(2)]  # tenant B, during A's flood
            wait_for(lambda: len(behaviour.received) == SHARE + 2, "tenant B reaches the engine")
            a_answers = [f.result(timeout=60) for f in flood]
            b_answers = [f.result(timeout=60)[0] for f in others]
    finally:
        health = stop_health_probe(probe)
        for each in clients:
            each.close()
    return a_answers, b_answers, health


def test_one_tenant_cannot_take_every_engine_slot(stalled_gateway: tuple[str, FakeBehaviour]) -> None:
    """The flood shares the slots fairly and never stalls the gateway's event loop."""
    url, behaviour = stalled_gateway
    stretches, stalls = loop_counts(url)
    a_answers, b_answers, health = flood_once(url, behaviour)
    after = loop_counts(url)
    stretches, stalls = after[0] - stretches, after[1] - stalls
    a_statuses = Counter(r.status_code for r, _ in a_answers)
    assert a_statuses == {200: SHARE, 429: FLOOD - SHARE}, a_statuses
    for response, took in a_answers:
        check_error_shape(response)
        if response.status_code == 429:
            assert response.headers["Retry-After"] == "1"
            assert response.json()["error"]["type"] == "rate_limit_error"
            assert took < STALL_S, "the surplus is refused at once, not queued behind the stalled slots"
    assert [r.status_code for r in b_answers] == [200, 200], [r.text[:200] for r in b_answers]
    # the planner's traffic took slots like chat's: both kinds reached the stalled engine
    kinds = {"planner" if b.get("structured_outputs") else "chat" for b in behaviour.received}
    assert kinds == {"chat", "planner"}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY_A}"}) as client:
        metrics = client.get("/metrics").text
    assert f'planstack_upstream_rejected_total{{reason="tenant"}} {float(FLOOD - SHARE)}' in metrics
    assert len(health) >= 10, "/health was measured throughout the flood"
    assert {status for status, _ in health} == {200}
    worst = max(ms for _, ms in health)
    report = f"{stalls:.0f} of {stretches:.0f} event-loop stretches over {HEALTH_BOUND_S * 1000:.0f} ms of CPU"
    print(f"/health during the flood: {len(health)} probes, max {worst:.1f} ms; {report}")
    assert not stalls, report

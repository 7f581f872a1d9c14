"""Several gateway processes on one run store, on both backends (one SQLite file; one REAL PostgreSQL
database): a run started on A is followed live from B; A SIGKILLed mid-run → B takes it over once
A's lease expires and finishes it without re-executing committed nodes; two concurrent resumes of
an interrupted run → exactly one drives, the other gets 409.

The gateways are real processes (tests/reliability/gateway_worker.py, uvicorn on loopback ports)
over the demo + fault tools, with given plans (no engine needed), and short lease timings.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import KEY_A
from tests.fakes.upstream import free_port
from tests.reliability.helpers import check_error_shape, sse_events

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
LEASE = {"PLANSTACK_RUNS__LEASE_TTL_S": "3", "PLANSTACK_RUNS__HEARTBEAT_S": "0.5",
         "PLANSTACK_RUNS__TAKEOVER_INTERVAL_S": "0.5", "PLANSTACK_RUNS__FOLLOW_POLL_S": "0.2"}  # fmt: skip


def calls(path: Path) -> Counter[str]:
    return Counter(path.read_text().split()) if path.exists() else Counter()


@dataclass
class Gateway:
    name: str
    url: str
    proc: subprocess.Popen[str]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # SIGKILL: no clean-up at all (its lease is NOT released)
        self.proc.wait(timeout=30)


class Cluster:
    """Gateway processes sharing one store URL, each with its own home folder (as on separate hosts)."""

    def __init__(self, tmp_path: Path, store_url: str) -> None:
        self.tmp_path = tmp_path
        self.store_url = store_url
        self.calls_file = tmp_path / "calls.txt"
        self.started: list[Gateway] = []

    def start(
        self, name: str, *, block: str | None = None, release: Path | None = None, takeover: bool = True
    ) -> Gateway:
        """`block`: the `step` label this gateway's driver stops in, forever or until `release` exists."""
        port = free_port()
        home = self.tmp_path / name
        args = [sys.executable, "-m", "tests.reliability.gateway_worker", str(home), str(port), str(self.calls_file)]
        env = {**os.environ, "PYTHONPATH": str(REPO), "PLANSTACK_RUNS__STORE_URL": self.store_url, **LEASE,
               "PLANSTACK_RUNS__TAKEOVER": "true" if takeover else "false"}  # fmt: skip
        extra = ([block] if block else []) + ([str(release)] if block and release else [])
        proc = subprocess.Popen(args + extra, stdout=subprocess.PIPE, text=True, cwd=REPO, env=env)
        gateway = Gateway(name, f"http://127.0.0.1:{port}", proc)
        self.started.append(gateway)
        with gateway.client() as client:
            for _ in range(600):
                assert proc.poll() is None, f"gateway {name} exited during start-up"
                with contextlib.suppress(httpx.TransportError):
                    if client.get("/v1/models").status_code == 200:
                        return gateway
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0.1)  # a pause that also notices an early exit
        raise AssertionError(f"gateway {name} did not start")

    def stop(self) -> None:
        for gateway in self.started:
            gateway.kill()
            if gateway.proc.stdout is not None:
                gateway.proc.stdout.close()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    if request.param == "sqlite":
        url = f"sqlite://{tmp_path / 'shared' / 'runs.sqlite3'}"
    else:
        url = request.getfixturevalue("postgres_url")
    running = Cluster(tmp_path, url)
    try:
        yield running
    finally:
        running.stop()


def wait_for(client: httpx.Client, run_id: str, status: str, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        view = client.get(f"/v1/runs/{run_id}").json()
        if view["status"] == status or time.monotonic() > deadline:
            return view
        time.sleep(0.1)


def start_run(gateway: Gateway, plan: dict[str, Any]) -> str:
    with gateway.client() as client:
        created = client.post("/v1/runs", json={"request": "multi", "plan": plan})
    assert created.status_code == 202, created.text
    return str(created.json()["run_id"])


def blocked_on_a(cluster: Cluster, plan: dict[str, Any], **b_options: Any) -> tuple[Gateway, Gateway, str]:
    """A (whose `step b` blocks forever) and B up; a run started on A and blocked in node n2."""
    a = cluster.start("a", block="b")
    b = cluster.start("b", **b_options)
    run_id = start_run(a, plan)
    assert a.proc.stdout is not None and a.proc.stdout.readline().strip() == "READY b"
    return a, b, run_id


BLOCKING = {"nodes": [
    {"id": "n1", "tool": "step", "args": {"label": "a"}},
    {"id": "n2", "tool": "step", "args": {"label": "b"}, "depends_on": ["n1"]},
    {"id": "n3", "tool": "step", "args": {"label": "$n2.text"}, "depends_on": ["n2"]},
]}  # fmt: skip


def test_a_run_started_on_a_is_followed_live_from_b(cluster: Cluster) -> None:
    a, b = cluster.start("a"), cluster.start("b")
    plan = {"nodes": [
        {"id": "n1", "tool": "step", "args": {"label": "first"}},
        {"id": "n2", "tool": "nap", "args": {"label": "slow", "seconds": 1.5}, "depends_on": ["n1"]},
        {"id": "n3", "tool": "step", "args": {"label": "$n2.text"}, "depends_on": ["n2"]},
    ]}  # fmt: skip
    run_id = start_run(a, plan)
    with b.client() as from_b, a.client() as from_a:
        assert from_b.get(f"/v1/runs/{run_id}").json()["status"] == "running"  # not "interrupted"
        resumed = from_b.post(f"/v1/runs/{run_id}/resume")  # a live run is not driven twice
        check_error_shape(resumed)
        assert resumed.status_code == 409 and resumed.json()["error"]["code"] == "run_busy"
        seen_running: list[str] = []
        lines: list[str] = []
        with from_b.stream("GET", f"/v1/runs/{run_id}/events") as stream:
            for line in stream.iter_lines():
                lines.append(line)
                if line == "event: node_started" and not seen_running:
                    seen_running.append(from_a.get(f"/v1/runs/{run_id}").json()["status"])
        final = from_a.get(f"/v1/runs/{run_id}").json()
    events = sse_events(lines)
    kinds = [kind for kind, _ in events]
    assert seen_running == ["running"]  # B delivered an event while the run was still executing on A
    assert kinds[0] == "run_started" and kinds[-2:] == ["run_finished", "done"]
    assert kinds.count("node_finished") == 3 and kinds.count("run_started") == 1
    assert [data["seq"] for kind, data in events if kind != "done"] == list(range(1, len(events)))
    assert final["status"] == "succeeded"
    assert calls(cluster.calls_file) == Counter({"first": 1, "slow": 1, "slept-slow": 1})


def test_a_killed_gateway_s_run_is_taken_over_and_finished_without_redoing_nodes(cluster: Cluster) -> None:
    a, b, run_id = blocked_on_a(cluster, BLOCKING)
    with b.client() as from_b:
        before = from_b.get(f"/v1/runs/{run_id}").json()
        assert before["status"] == "running" and [n["node_id"] for n in before["nodes"]] == ["n1"]
        killed_at = time.monotonic()
        a.kill()
        after = wait_for(from_b, run_id, "succeeded")
        took = time.monotonic() - killed_at
        with from_b.stream("GET", f"/v1/runs/{run_id}/events") as stream:
            kinds = [kind for kind, _ in sse_events(list(stream.iter_lines()))]
    print(f"takeover: run finished on B {took:.2f} s after A was killed (lease 3 s, sweep every 0.5 s)")
    assert after["status"] == "succeeded", after
    nodes = {n["node_id"]: n for n in after["nodes"]}
    assert set(nodes) == {"n1", "n2", "n3"} and nodes["n3"]["args"] == {"label": "done-b"}
    assert nodes["n1"]["output_sha256"] == before["nodes"][0]["output_sha256"]  # committed: kept, not redone
    assert nodes["n1"]["finished_at"] == before["nodes"][0]["finished_at"]
    assert calls(cluster.calls_file) == Counter({"a": 1, "b": 2, "done-b": 1})  # only the interrupted node again
    assert kinds.count("run_started") == 2 and kinds.count("run_finished") == 1 and kinds.count("node_finished") == 3


def test_two_concurrent_resumes_exactly_one_drives(cluster: Cluster) -> None:
    # B and C stop in n2 too, until `release` exists: whichever resume wins holds the run (and its
    # lease) while the other is answered, however slowly the two requests arrive. Without the hold
    # the winner could finish the run first, and the late resume would rightly get 200 (finished).
    release = cluster.tmp_path / "release-b"
    a, b, run_id = blocked_on_a(cluster, BLOCKING, takeover=False, block="b", release=release)
    c = cluster.start("c", takeover=False, block="b", release=release)
    a.kill()
    with b.client() as from_b:
        assert wait_for(from_b, run_id, "interrupted")["status"] == "interrupted"
    answers: dict[str, httpx.Response] = {}
    barrier = threading.Barrier(2)

    def resume(gateway: Gateway) -> None:
        with gateway.client() as client:
            barrier.wait()
            answers[gateway.name] = client.post(f"/v1/runs/{run_id}/resume")

    threads = [threading.Thread(target=resume, args=(g,)) for g in (b, c)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    statuses = sorted(response.status_code for response in answers.values())
    assert statuses == [200, 409], {name: r.text for name, r in answers.items()}
    refused = next(r for r in answers.values() if r.status_code == 409)
    check_error_shape(refused)
    assert refused.json()["error"]["code"] == "run_busy" and int(refused.headers["retry-after"]) >= 1
    release.touch()
    with b.client() as from_b:
        after = wait_for(from_b, run_id, "succeeded")
        with from_b.stream("GET", f"/v1/runs/{run_id}/events") as stream:
            kinds = [kind for kind, _ in sse_events(list(stream.iter_lines()))]
    assert after["status"] == "succeeded", after
    assert calls(cluster.calls_file) == Counter({"a": 1, "b": 2, "done-b": 1})  # one driver, not two
    assert kinds.count("run_started") == 2 and kinds.count("run_finished") == 1

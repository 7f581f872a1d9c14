"""Shared pieces of the security tests (test_rel_sec_*): a gateway in its own process, and a probe
that times `/health` from a separate client while an attack runs."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.conftest import FAKE_MODEL, KEY_A
from tests.fakes.upstream import FakeBehaviour, ServerThread, create_fake_upstream, free_port

REPO = Path(__file__).resolve().parents[2]
HEALTH_BOUND_S = 0.2  # the bound on /health latency while an attack runs


@dataclass
class GatewayProcess:
    url: str
    upstream: FakeBehaviour
    proc: subprocess.Popen[bytes]

    def client(self, key: str = KEY_A, timeout: float = 120) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout)


@contextmanager
def gateway_process(home: Path, behaviour: FakeBehaviour | None = None) -> Iterator[GatewayProcess]:
    """A fake upstream here, and a real gateway over it in a child process (tests/reliability/sec_worker.py)."""
    behaviour = behaviour or FakeBehaviour()
    upstream = ServerThread(create_fake_upstream(FAKE_MODEL, behaviour)).start()
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    log = (home / "gateway.log").open("wb")
    proc = subprocess.Popen(  # noqa: S603 - fixed argv
        [sys.executable, "-m", "tests.reliability.sec_worker", str(home), str(port), upstream.url],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (home / "gateway.log").read_text()[-2000:]
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the gateway did not start"
            time.sleep(0.2)
        yield GatewayProcess(url, behaviour, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()
        upstream.stop()


@dataclass
class HealthProbe:
    """Times GET /health every `interval_s` from its own thread and connection."""

    url: str
    interval_s: float = 0.05
    latencies: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                response = client.get("/health")
                self.latencies.append(time.perf_counter() - started)
                self.statuses.append(response.status_code)
                self._stop.wait(self.interval_s)

    def __enter__(self) -> HealthProbe:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    @property
    def worst(self) -> float:
        return max(self.latencies, default=0.0)

    def report(self) -> str:
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0
        return f"{len(ordered)} probes, p99 {p99 * 1000:.1f} ms, worst {self.worst * 1000:.1f} ms"

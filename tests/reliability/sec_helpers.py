"""Shared pieces of the security tests (test_rel_sec_*): a gateway in its own process, and a probe
that times `/health` from a separate client while an attack runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import httpx

from tests.conftest import KEY_A
from tests.fakes.upstream import free_port

REPO = Path(__file__).resolve().parents[2]
HEALTH_BOUND_S = 0.2  # the bound on /health latency while an attack runs
T = TypeVar("T")


@dataclass
class GatewayProcess:
    url: str
    proc: subprocess.Popen[bytes]

    def client(self, key: str = KEY_A, timeout: float = 120) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout)


@contextmanager
def _child(argv: list[str], log_path: Path, env: dict[str, str], ready_url: str) -> Iterator[subprocess.Popen[bytes]]:
    log = log_path.open("wb")
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log_path.read_text()[-2000:]
            try:
                if httpx.get(ready_url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"{argv[3]} did not start"
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


@contextmanager
def gateway_process(
    home: Path,
    reply: str = "hello from the fake upstream",
    *,
    model_dir: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[GatewayProcess]:
    """The fake upstream (answering `reply`) and a real gateway over it, each in its own process
    (tests/reliability/sec_worker.py); `model_dir` turns on the schema guard's compile worker, `env`
    adds PLANSTACK_* settings."""
    child_env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    worker = [sys.executable, "-m", "tests.reliability.sec_worker"]
    upstream_url = f"http://127.0.0.1:{free_port()}"
    upstream = [*worker, "upstream", upstream_url.rsplit(":", 1)[1], reply]
    with _child(upstream, home / "upstream.log", child_env, f"{upstream_url}/health"):
        port = free_port()
        argv = [*worker, "gateway", str(home), str(port), upstream_url, *([str(model_dir)] if model_dir else [])]
        url = f"http://127.0.0.1:{port}"
        with _child(argv, home / "gateway.log", child_env, f"{url}/health") as proc:
            yield GatewayProcess(url, proc)


@dataclass
class HealthProbe:
    """Times GET /health every `interval_s` from its own process (tests/reliability/sec_worker.py
    probe), so that neither the test's GIL nor its other threads can slow the measurement."""

    url: str
    interval_s: float = 0.05
    latencies: list[float] = field(default_factory=list)
    _proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> HealthProbe:
        argv = [sys.executable, "-m", "tests.reliability.sec_worker", "probe", self.url, str(self.interval_s)]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self._proc = subprocess.Popen(  # noqa: S603 - fixed argv
            argv, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self._proc.stdout is not None
        self._proc.stdout.readline()  # the first probe answered: measuring from now on
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.close()  # the probe stops after its current request
        out = self._proc.stdout.read()
        self._proc.wait(timeout=60)
        self.latencies.extend(float(line) for line in out.split())

    @property
    def worst(self) -> float:
        return max(self.latencies, default=0.0)

    def report(self) -> str:
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0
        return f"{len(ordered)} probes, p99 {p99 * 1000:.1f} ms, worst {self.worst * 1000:.1f} ms"


def probe_during(
    url: str,
    attack: Callable[[int], T],
    *,
    attempts: int = 3,
    retry: Callable[[HealthProbe, T], bool] | None = None,
    probes: list[HealthProbe] | None = None,
) -> tuple[HealthProbe, list[T]]:
    """Run `attack(attempt)` while a separate client times /health; returns the probe and what each
    attempt returned. The machine is shared and noisy (an idle gateway's worst probe reached 93 ms at
    load 2 and 309 ms at load 4), so an attempt whose worst probe is over the bound (or for which
    `retry` says so) is repeated (up to `attempts` in all): an event loop that the attack blocks is
    over the bound on every attempt. `probes` collects every attempt's probe."""
    results: list[T] = []
    for attempt in range(attempts):
        probe = HealthProbe(url)
        with probe:
            time.sleep(0.3)
            results.append(attack(attempt))
            time.sleep(0.3)
        if probes is not None:
            probes.append(probe)
        if probe.worst < HEALTH_BOUND_S and (retry is None or not retry(probe, results[-1])):
            break
    return probe, results

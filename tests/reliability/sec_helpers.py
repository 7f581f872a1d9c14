"""Shared pieces of the security tests (test_rel_sec_*): a gateway in its own process, and a probe
that times `/health` from a separate client while an attack runs and reads, from the gateway's metrics,
how long its event loop ran without yielding meanwhile.

The bound is on the second: the CPU time of the loop's own stretches (serving/loop_monitor.py) is the
gateway's doing, whatever else the machine runs. `/health`'s wall-clock latency passes through the
probe's process, the fake engine's (which `/health` asks) and the host's scheduler; on a loaded CI host
it reached 250-360 ms while the loop never ran 80 ms at a stretch, so it is reported, not bounded."""

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
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import KEY_A
from tests.fakes.upstream import free_port

REPO = Path(__file__).resolve().parents[2]
HEALTH_BOUND_S = 0.2  # the bound on /health latency while an attack runs: no loop stretch this long
LOOP_BUSY = "planstack_event_loop_busy_seconds"
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
    loop_stretches: int = 0  # the loop monitor's ticks during the probe
    loop_stalls: int = 0  # ... whose stretch ran over HEALTH_BOUND_S of the loop thread's CPU time
    loop_longest: str = "?"  # the smallest histogram bound the probe's longest stretch is within
    _proc: subprocess.Popen[str] | None = None
    _before: dict[str, float] = field(default_factory=dict)

    def __enter__(self) -> HealthProbe:
        self._before = loop_buckets(self.url)
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
        before = self._before
        self._before = loop_buckets(self.url)
        total = self._before["+Inf"] - before.get("+Inf", 0.0)
        self.loop_stretches = int(total)
        self.loop_stalls = int(total - _within(self._before, before, HEALTH_BOUND_S))
        bounds = sorted(float(le) for le in self._before if le != "+Inf")
        self.loop_longest = next(
            (f"{b * 1000:.0f} ms" for b in bounds if _within(self._before, before, b) >= total), "more"
        )

    @property
    def worst(self) -> float:
        return max(self.latencies, default=0.0)

    def report(self) -> str:
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0
        return (
            f"{len(ordered)} probes, p99 {p99 * 1000:.1f} ms, worst {self.worst * 1000:.1f} ms; event loop: "
            f"{self.loop_stalls} of {self.loop_stretches} stretches over {HEALTH_BOUND_S * 1000:.0f} ms of CPU, "
            f"the longest within {self.loop_longest}"
        )


def loop_buckets(url: str) -> dict[str, float]:
    """The gateway's loop-monitor histogram so far: cumulative count of stretches by upper bound (`le`)."""
    text = httpx.get(url + "/metrics", timeout=30).raise_for_status().text
    family = next(f for f in text_string_to_metric_families(text) if f.name == LOOP_BUSY)
    return {s.labels["le"]: s.value for s in family.samples if s.name == LOOP_BUSY + "_bucket"}


def _within(now: dict[str, float], before: dict[str, float], bound: float) -> float:
    """Stretches between the two readings that were at most `bound` (the largest histogram bound below it)."""
    les = [le for le in now if le != "+Inf" and float(le) <= bound]
    return max((now[le] - before.get(le, 0.0) for le in les), default=0.0)


def loop_counts(url: str) -> tuple[float, float]:
    """(stretches, stretches over HEALTH_BOUND_S) the gateway's loop monitor has counted so far."""
    buckets = loop_buckets(url)
    return buckets["+Inf"], buckets["+Inf"] - _within(buckets, {}, HEALTH_BOUND_S)


def probe_during(
    url: str,
    attack: Callable[[int], T],
    *,
    attempts: int = 3,
    retry: Callable[[HealthProbe, T], bool] | None = None,
    probes: list[HealthProbe] | None = None,
) -> tuple[HealthProbe, list[T]]:
    """Run `attack(attempt)` while a separate client times /health; returns the probe and what each
    attempt returned. An attempt in which the loop stalled (or for which `retry` says so: a figure of
    the test's own that the host's load can move) is repeated, up to `attempts` in all; `probes`
    collects every attempt's probe."""
    results: list[T] = []
    for attempt in range(attempts):
        probe = HealthProbe(url)
        with probe:
            time.sleep(0.3)
            results.append(attack(attempt))
            time.sleep(0.3)
        if probes is not None:
            probes.append(probe)
        if not probe.loop_stalls and (retry is None or not retry(probe, results[-1])):
            break
    return probe, results

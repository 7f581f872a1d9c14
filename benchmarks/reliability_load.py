"""Bounded load test of the gateway in front of the real engine: back-pressure, no lost or duplicated
requests, bounded memory.

`clients` threads each send `per_client` chat requests (small `max_tokens`) through a gateway whose
`gateway.max_concurrent_upstream` is small, so that demand is well above what it admits. A client
that gets 429 waits the `Retry-After` it was given and sends its next request. Every request gets
exactly one answer; the engine's `vllm:request_success_total` delta is compared with the gateway's
200s, response ids are checked for duplicates, the gateway's in-flight gauge is sampled, and the
process RSS is measured before and after. Loopback only; fixed count, bounded duration.

    python -m benchmarks.reliability_load [--engine-url http://127.0.0.1:8001] [--clients 16] [--per-client 6]

Writes benchmarks/results/reliability_load.{json,md}. `tests/reliability/test_rel_load.py` runs the
same function against the test session's engine and asserts on the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import statistics
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

RESULTS = Path(__file__).resolve().parent / "results"
SUCCESS_RE = re.compile(
    r'^vllm:request_success_total\{[^}]*finished_reason="(stop|length|repetition)"[^}]*\} (\S+)$', re.M
)
IN_FLIGHT_RE = re.compile(r"^planstack_upstream_in_flight (\S+)$", re.M)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def engine_successes(engine_url: str, headers: dict[str, str]) -> float:
    """Requests the engine finished normally, over its whole life."""
    text = httpx.get(f"{engine_url}/metrics", headers=headers, timeout=10).text
    return sum(float(value) for _, value in SUCCESS_RE.findall(text))


@dataclass
class Outcome:
    client: int
    seq: int
    status: int  # 0: no HTTP answer (client-side timeout or connection error)
    latency_s: float
    response_id: str | None = None
    retry_after: str | None = None
    error: str | None = None


@dataclass
class LoadReport:
    clients: int
    per_client: int
    max_tokens: int
    max_concurrent_upstream: int
    duration_s: float
    outcomes: list[Outcome] = field(default_factory=list)
    max_in_flight: float = 0.0
    engine_delta: float | None = None
    rss_before_mb: float | None = None
    rss_after_mb: float | None = None

    @property
    def sent(self) -> int:
        return self.clients * self.per_client

    def statuses(self) -> Counter[int]:
        return Counter(o.status for o in self.outcomes)

    def latencies(self, status: int) -> list[float]:
        return [o.latency_s for o in self.outcomes if o.status == status]

    def summary(self) -> dict[str, Any]:
        statuses = self.statuses()
        ok, limited = self.latencies(200), self.latencies(429)
        return {
            "sent": self.sent,
            "answered": len(self.outcomes),
            "status_counts": {str(k): v for k, v in sorted(statuses.items())},
            "error_rate": round(1 - statuses[200] / max(len(self.outcomes), 1), 4),
            "non_429_error_rate": round(
                sum(v for k, v in statuses.items() if k not in (200, 429)) / max(len(self.outcomes), 1), 4
            ),
            "max_in_flight": self.max_in_flight,
            "max_concurrent_upstream": self.max_concurrent_upstream,
            "p50_ok_s": round(statistics.median(ok), 3) if ok else None,
            "p95_ok_s": round(percentile(ok, 95), 3) if ok else None,
            "p50_429_s": round(statistics.median(limited), 4) if limited else None,
            "p95_429_s": round(percentile(limited, 95), 4) if limited else None,
            "throughput_ok_per_s": round(statuses[200] / self.duration_s, 2) if self.duration_s else None,
            "duration_s": round(self.duration_s, 2),
            "engine_success_delta": self.engine_delta,
            "rss_before_mb": self.rss_before_mb,
            "rss_after_mb": self.rss_after_mb,
        }

    def markdown(self) -> str:
        s = self.summary()
        statuses_200 = s["status_counts"].get("200", 0)
        rows = [
            ("offered load", f"{self.clients} clients × {self.per_client} requests, max_tokens {self.max_tokens}"),
            ("gateway.max_concurrent_upstream", str(self.max_concurrent_upstream)),
            ("requests sent / answered", f"{s['sent']} / {s['answered']}"),
            ("answers by status", ", ".join(f"{k}: {v}" for k, v in s["status_counts"].items())),
            ("engine successes (delta) vs gateway 200s", f"{s['engine_success_delta']} vs {statuses_200}"),
            ("requests held at the engine at most (sampled)", f"{s['max_in_flight']:g}"),
            ("error rate (all non-200) / without 429", f"{s['error_rate']:.1%} / {s['non_429_error_rate']:.1%}"),
            ("latency of 200s p50 / p95", f"{s['p50_ok_s']} s / {s['p95_ok_s']} s"),
            ("latency of 429s p50 / p95", f"{s['p50_429_s']} s / {s['p95_429_s']} s"),
            ("throughput (200s)", f"{s['throughput_ok_per_s']} req/s over {s['duration_s']} s"),
            ("gateway process RSS before → after", f"{s['rss_before_mb']} MB → {s['rss_after_mb']} MB"),
        ]
        lines = ["# Reliability: load with back-pressure", "", "| measure | value |", "|---|---|"]
        lines += [f"| {name} | {value} |" for name, value in rows]
        lines += ["", "Clients that get 429 wait the `Retry-After` they were given, then send their next request."]
        return "\n".join(lines) + "\n"


def _client_loop(
    url: str, key: str, model: str, index: int, per_client: int, max_tokens: int, out: list[Outcome]
) -> None:
    body = {"messages": [{"role": "user", "content": f"Client {index}: name a colour."}], "max_tokens": max_tokens,
            "temperature": 0, "model": model}  # fmt: skip
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        for seq in range(per_client):
            start = time.perf_counter()
            try:
                response = client.post("/v1/chat/completions", json=body)
            except httpx.HTTPError as exc:
                out.append(Outcome(index, seq, 0, time.perf_counter() - start, error=type(exc).__name__))
                continue
            latency = time.perf_counter() - start
            payload = response.json()
            out.append(
                Outcome(
                    index,
                    seq,
                    response.status_code,
                    latency,
                    response_id=payload.get("id") if response.status_code == 200 else None,
                    retry_after=response.headers.get("retry-after"),
                    error=None if response.status_code == 200 else payload["error"]["code"],
                )
            )
            if response.status_code in (429, 503):
                time.sleep(min(float(response.headers.get("retry-after", "1")), 5.0))


def run_load(
    gateway_url: str,
    engine_url: str,
    *,
    key: str,
    model: str,
    max_concurrent_upstream: int,
    clients: int = 16,
    per_client: int = 6,
    max_tokens: int = 8,
    engine_headers: dict[str, str] | None = None,
) -> LoadReport:
    """One bounded load run (a warm-up round first); figures in the returned report. `engine_headers`
    carry the engine's key for its /metrics."""
    engine_headers = engine_headers or {}
    warm: list[Outcome] = []
    _client_loop(gateway_url, key, model, -1, 2, max_tokens, warm)
    gc.collect()
    process = psutil.Process()
    rss_before = process.memory_info().rss / 2**20
    before = engine_successes(engine_url, engine_headers)
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    stop = threading.Event()
    peak = [0.0]

    def sample() -> None:
        with httpx.Client(base_url=gateway_url, timeout=5) as client:
            while not stop.wait(0.05):
                match = IN_FLIGHT_RE.search(client.get("/metrics").text)
                if match:
                    peak[0] = max(peak[0], float(match.group(1)))

    def worker(index: int) -> None:
        mine: list[Outcome] = []
        _client_loop(gateway_url, key, model, index, per_client, max_tokens, mine)
        with lock:
            outcomes.extend(mine)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    duration = time.perf_counter() - start
    stop.set()
    sampler.join(timeout=10)
    time.sleep(0.5)  # the engine's counters are updated when a request's output is finalised
    delta = engine_successes(engine_url, engine_headers) - before
    gc.collect()
    return LoadReport(
        clients=clients,
        per_client=per_client,
        max_tokens=max_tokens,
        max_concurrent_upstream=max_concurrent_upstream,
        duration_s=duration,
        outcomes=sorted(outcomes, key=lambda o: (o.client, o.seq)),
        max_in_flight=peak[0],
        engine_delta=delta,
        rss_before_mb=round(rss_before, 1),
        rss_after_mb=round(process.memory_info().rss / 2**20, 1),
    )


def write_report(report: LoadReport, results: Path = RESULTS) -> Path:
    results.mkdir(parents=True, exist_ok=True)
    (results / "reliability_load.json").write_text(
        json.dumps({"summary": report.summary(), "outcomes": [asdict(o) for o in report.outcomes]}, indent=2) + "\n"
    )
    path = results / "reliability_load.md"
    path.write_text(report.markdown())
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine-url", default="http://127.0.0.1:8001")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--per-client", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--max-concurrent-upstream", type=int, default=4)
    args = parser.parse_args()

    import socket
    from urllib.parse import urlparse

    import uvicorn
    from pydantic import SecretStr

    from serving.app import create_app
    from serving.engine.process import engine_headers, existing_engine_key
    from serving.settings import EngineSettings, GatewaySettings, Settings, load_settings

    parsed = urlparse(args.engine_url)
    engine_key = existing_engine_key(load_settings())  # the key of an engine started from this home, if any
    headers = engine_headers(engine_key)
    model = httpx.get(f"{args.engine_url}/v1/models", headers=headers, timeout=10).json()["data"][0]["id"]
    key = "reliability-load-key"
    settings = Settings(
        home=Path(tempfile.mkdtemp(prefix="planstack-load-")),
        api_keys=SecretStr(f"{key}=load"),
        engine=EngineSettings(
            host=parsed.hostname or "127.0.0.1",
            port=parsed.port or 80,
            api_key=SecretStr(engine_key) if engine_key else None,
        ),
        gateway=GatewaySettings(max_concurrent_upstream=args.max_concurrent_upstream),
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = create_app(settings, engine_model=model, model_dir=None)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        report = run_load(
            f"http://127.0.0.1:{port}",
            args.engine_url,
            key=key,
            model=model,
            max_concurrent_upstream=args.max_concurrent_upstream,
            clients=args.clients,
            per_client=args.per_client,
            max_tokens=args.max_tokens,
            engine_headers=headers,
        )
    finally:
        server.should_exit = True
        thread.join(timeout=20)
    print(report.markdown())
    print(f"written to {write_report(report)}")


if __name__ == "__main__":
    main()

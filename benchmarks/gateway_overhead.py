"""Gateway overhead: the same chat requests sent straight to the engine and through the gateway.

Requests are interleaved (direct, gateway, direct, …) in one run so that the noise of this machine
hits both paths alike; warm-up requests are excluded. The gateway runs as its own process
(`planstack serve --external-engine`), as in production. Reports p50/p95 of both paths, the added
latency and the ratio, as JSON and Markdown under benchmarks/results/.

    python -m benchmarks.gateway_overhead [--pairs 200] [--engine-url http://127.0.0.1:8001]

Needs a running engine (`planstack engine start`, or `make serve` in another terminal).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from serving.engine.process import EngineProcess, engine_headers, existing_engine_key, port_in_use
from serving.engine.profiles import load_profile
from serving.settings import load_settings

RESULTS = Path(__file__).resolve().parent / "results"
DEV_KEY = "planstack-bench-key"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def start_gateway(engine_url: str, port: int, *, scope: str = "tenant") -> subprocess.Popen[bytes]:
    """`planstack serve --external-engine` in its own process, answering on `port`."""
    host, engine_port = engine_url.removeprefix("http://").split(":")
    env = dict(os.environ)
    env.update(
        {
            "PLANSTACK_ENGINE__HOST": host,
            "PLANSTACK_ENGINE__PORT": engine_port,
            "PLANSTACK_GATEWAY__PORT": str(port),
            "PLANSTACK_API_KEYS": f"{DEV_KEY}=bench",
            "PLANSTACK_LOG_LEVEL": "warning",
            "PLANSTACK_ISOLATION__SCOPE": scope,
        }
    )
    cmd = [sys.executable, "-m", "serving.cli", "serve", "--external-engine"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)  # noqa: S603
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError("the gateway exited during start-up")
        time.sleep(0.5)
    proc.kill()
    raise RuntimeError("the gateway did not start")


def run(pairs: int, warmup: int, max_tokens: int, engine_url: str, gateway_port: int) -> dict[str, Any]:
    settings = load_settings()
    model = load_profile(settings.engine.profile).served_model_name
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Name one city in France."}],
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    gateway = start_gateway(engine_url, gateway_port)
    direct_times: list[float] = []
    gateway_times: list[float] = []
    try:
        with httpx.Client(timeout=120) as client:
            targets = [
                (f"{engine_url}/v1/chat/completions", engine_headers(existing_engine_key(settings)), direct_times),
                (
                    f"http://127.0.0.1:{gateway_port}/v1/chat/completions",
                    {"Authorization": f"Bearer {DEV_KEY}"},
                    gateway_times,
                ),
            ]
            for i in range(warmup + pairs):
                order = targets if i % 2 == 0 else targets[::-1]  # alternate which path goes first
                for url, headers, sink in order:
                    started = time.perf_counter()
                    response = client.post(url, json=body, headers=headers)
                    elapsed = time.perf_counter() - started
                    response.raise_for_status()
                    if i >= warmup:
                        sink.append(elapsed * 1000)
                if i and i % 50 == 0:
                    print(f"  {i}/{warmup + pairs} pairs", file=sys.stderr)
    finally:
        gateway.terminate()
        gateway.wait(timeout=20)

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "p50_ms": round(statistics.median(values), 3),
            "p95_ms": round(percentile(values, 95), 3),
            "mean_ms": round(statistics.fmean(values), 3),
        }

    direct, through = summary(direct_times), summary(gateway_times)
    return {
        "benchmark": "gateway_overhead",
        "model": model,
        "pairs": pairs,
        "warmup_pairs": warmup,
        "max_tokens": max_tokens,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "direct": direct,
        "gateway": through,
        "added_p50_ms": round(through["p50_ms"] - direct["p50_ms"], 3),
        "p95_ratio": round(through["p95_ms"] / direct["p95_ms"], 4),
        "targets": {"added_p50_ms_max": 3.0, "p95_ratio_max": 1.05},
    }


def to_markdown(report: dict[str, Any]) -> str:
    d, g = report["direct"], report["gateway"]
    return "\n".join(
        [
            "# Gateway overhead",
            "",
            f"{report['pairs']} interleaved request pairs (after {report['warmup_pairs']} warm-up pairs), "
            f"model `{report['model']}`, max_tokens={report['max_tokens']}, {report['machine']['cpus']} CPUs "
            f"({report['machine']['platform']}).",
            "",
            "| path | p50 (ms) | p95 (ms) | mean (ms) |",
            "|---|---|---|---|",
            f"| engine directly | {d['p50_ms']} | {d['p95_ms']} | {d['mean_ms']} |",
            f"| through the gateway | {g['p50_ms']} | {g['p95_ms']} | {g['mean_ms']} |",
            "",
            f"Added at p50: **{report['added_p50_ms']} ms** (target ≤ 3 ms); "
            f"p95 ratio: **{report['p95_ratio']}** (target ≤ 1.05).",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=1)
    parser.add_argument("--engine-url", default=None)
    parser.add_argument("--gateway-port", type=int, default=8300)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    settings = load_settings()
    engine_url = args.engine_url or settings.engine.base_url
    engine: EngineProcess | None = None
    if args.engine_url is None and not port_in_use(settings.engine.host, settings.engine.port):
        from serving.engine.model_prep import prepare_model

        profile = load_profile(settings.engine.profile)
        engine = EngineProcess(settings, profile, prepare_model(profile, settings).path)
        print("starting the engine (about 2 minutes)…", file=sys.stderr)
        engine.start()
        engine.wait_healthy(settings.engine.startup_timeout_s)
    try:
        report = run(args.pairs, args.warmup, args.max_tokens, engine_url, args.gateway_port)
    finally:
        if engine is not None:
            engine.stop()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gateway_overhead.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "gateway_overhead.md").write_text(to_markdown(report))
    print(to_markdown(report))


if __name__ == "__main__":
    main()

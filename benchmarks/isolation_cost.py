"""What each prefix-cache isolation scope costs: time to first token of a long shared prompt.

A planner-sized system prompt (tool catalog and examples, ~1,500 tokens) followed by a short user
turn is sent repeatedly by one tenant through gateways configured with each scope (`tenant`,
`session` with one session id, `request`), with `max_tokens=1` so that latency ≈ prefill = time to
first token. Scopes are interleaved request by request, so machine noise hits all alike. Reports
p50/p95 per scope and the cached prompt tokens the engine reported, as JSON and Markdown.

    python -m benchmarks.isolation_cost [--rounds 30] [--engine-url http://127.0.0.1:8001]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from benchmarks.gateway_overhead import DEV_KEY, percentile, start_gateway
from serving.engine.profiles import load_profile
from serving.settings import load_settings

RESULTS = Path(__file__).resolve().parent / "results"
SCOPES = ("tenant", "session", "request")


def long_prompt() -> str:
    nonce = uuid.uuid4().hex  # nothing cached from an earlier run
    tools = " ".join(
        f"Tool {i}: search_item_{i}(city: str, date: str, max_price: number) returns a list of offers with"
        f" ids, prices and ratings; use it when the user asks about category {i}."
        for i in range(40)
    )
    return f"[{nonce}] You are a planner. Write a JSON plan over these tools. {tools}"


def run(rounds: int, engine_url: str, base_port: int) -> dict[str, Any]:
    model = load_profile(load_settings().engine.profile).served_model_name
    gateways = {scope: start_gateway(engine_url, base_port + i, scope=scope) for i, scope in enumerate(SCOPES)}
    system = long_prompt()
    latency: dict[str, list[float]] = {scope: [] for scope in SCOPES}
    cached: dict[str, list[int]] = {scope: [] for scope in SCOPES}
    try:
        with httpx.Client(timeout=120) as client:
            for r in range(rounds + 1):
                for i, scope in enumerate(SCOPES):
                    body = {
                        "model": model,
                        "messages": [{"role": "system", "content": system}, {"role": "user", "content": f"Plan {r}"}],
                        "max_tokens": 1,
                    }
                    headers = {"Authorization": f"Bearer {DEV_KEY}", "X-Planstack-Session": "bench-session"}
                    started = time.perf_counter()
                    response = client.post(f"http://127.0.0.1:{base_port + i}/v1/chat/completions", json=body,
                                           headers=headers)  # fmt: skip
                    elapsed = (time.perf_counter() - started) * 1000
                    response.raise_for_status()
                    if r == 0:
                        continue  # the first request of each scope fills its cache: not counted
                    details = response.json()["usage"].get("prompt_tokens_details") or {}
                    latency[scope].append(elapsed)
                    cached[scope].append(int(details.get("cached_tokens") or 0))
                    prompt_tokens = response.json()["usage"]["prompt_tokens"]
                if r and r % 10 == 0:
                    print(f"  {r}/{rounds} rounds", file=sys.stderr)
    finally:
        for proc in gateways.values():
            proc.terminate()
            proc.wait(timeout=20)
    return {
        "benchmark": "isolation_cost",
        "model": model,
        "rounds": rounds,
        "prompt_tokens": prompt_tokens,
        "scopes": {
            scope: {
                "p50_ms": round(statistics.median(latency[scope]), 2),
                "p95_ms": round(percentile(latency[scope], 95), 2),
                "mean_cached_tokens": round(statistics.fmean(cached[scope]), 1),
            }
            for scope in SCOPES
        },
    }


def to_markdown(report: dict[str, Any]) -> str:
    rows = [
        f"| `{scope}` | {v['p50_ms']} | {v['p95_ms']} | {v['mean_cached_tokens']} |"
        for scope, v in report["scopes"].items()
    ]
    return "\n".join(
        [
            "# Cost of prefix-cache isolation scopes",
            "",
            f"{report['rounds']} rounds, one request per scope per round (interleaved), a "
            f"{report['prompt_tokens']}-token prompt, `max_tokens=1` (latency ≈ time to first token), "
            f"model `{report['model']}`.",
            "",
            "| scope | p50 (ms) | p95 (ms) | cached prompt tokens (mean) |",
            "|---|---|---|---|",
            *rows,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--engine-url", default=None)
    parser.add_argument("--base-port", type=int, default=8320)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    report = run(args.rounds, args.engine_url or load_settings().engine.base_url, args.base_port)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "isolation_cost.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "isolation_cost.md").write_text(to_markdown(report))
    print(to_markdown(report))


if __name__ == "__main__":
    main()

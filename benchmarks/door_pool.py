"""Where the door's expensive checks should run: worker threads or worker processes (serving/door).

A real gateway in its own process (no engine needed: every request is refused by the door), for each
`door.kind`; `--requests` clients at once each send `POST /v1/plans` with a distinct catalog of
`--tools` tools of about 6 KB (about 780 KB for 128), valid until its last tool's last argument, so
that the whole catalog is meta-validated (pure-Python JSON-Schema validation, the cost the issue
measured at 4.8 s per catalog) before the 400. Meanwhile a separate process times `GET /health`
every 50 ms. The pool runs every request at once (`door.workers` = `door.per_tenant` = requests).

    python -m benchmarks.door_pool [--rounds 3] [--requests 4] [--tools 128]

Writes benchmarks/results/door_pool.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

RESULTS = Path(__file__).resolve().parent / "results"
KEY = "bench-door-key-0000"


def catalog(tag: str, tools: int) -> list[dict[str, Any]]:
    """`tools` tools of 20 enumerated arguments each; the last argument of the last tool has an invalid
    `minLength` that only the JSON-Schema meta-validation finds (after everything else was checked)."""
    made = []
    for index in range(tools):
        props: dict[str, Any] = {
            f"arg{j}": {"type": "string", "title": f"{tag}{j}", "description": "x" * 190, "enum": ["a", "b", "c"]}
            for j in range(20)
        }
        if index == tools - 1:
            props["arg19"]["minLength"] = "not a number"
        parameters = {"type": "object", "properties": props}
        function = {"name": f"tool_{index}", "description": "d", "parameters": parameters}
        made.append({"type": "function", "function": function})
    return made


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(port: str, home: str) -> None:
    """The gateway (settings from PLANSTACK_* and these arguments), its engine port closed."""
    import uvicorn

    from serving.app import create_app
    from serving.settings import load_settings

    settings = load_settings(home=Path(home))
    settings.engine.port = free_port()  # nothing listens there: no request of this benchmark reaches it
    uvicorn.run(create_app(settings, engine_model="none"), host="127.0.0.1", port=int(port), log_level="warning")


def probe(url: str) -> None:
    """GET /health every 50 ms until stdin closes; one latency (seconds) a line."""
    import select

    with httpx.Client(base_url=url, timeout=30) as client:
        while True:
            started = time.perf_counter()
            client.get("/health")
            print(f"{time.perf_counter() - started:.6f}", flush=True)
            if select.select([sys.stdin], [], [], 0.05)[0]:
                return


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else 0.0


def measure(kind: str, rounds: int, requests: int, tools: int) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    home = tempfile.mkdtemp(prefix="door-bench-")
    env = {
        **os.environ,
        "PLANSTACK_API_KEYS": f"{KEY}=bench",
        "PLANSTACK_DOOR__KIND": kind,
        "PLANSTACK_DOOR__WORKERS": str(requests),
        "PLANSTACK_DOOR__PER_TENANT": str(requests),
        "PLANSTACK_DOOR__DEADLINE_S": "120",
        "PLANSTACK_DOOR__CATALOG_CACHE_SIZE": "0",
    }
    server = os.environ.get("DOOR_BENCH_SERVER")  # a wrapper of `serve` (diagnostics), else this module
    command = [server] if server else ["-m", "benchmarks.door_pool", "serve"]
    argv = [sys.executable, *command, str(port), home]
    gateway = subprocess.Popen(argv, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code in (200, 503):
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and gateway.poll() is None, "the gateway did not start"
            time.sleep(0.2)
        headers = {"Authorization": f"Bearer {KEY}"}

        def one(tag: str) -> tuple[int, float]:
            body = json.dumps({"request": "x", "tools": catalog(tag, tools)})
            started = time.perf_counter()
            response = httpx.post(url + "/v1/plans", content=body, headers=headers, timeout=300)
            return response.status_code, time.perf_counter() - started

        one("warm")  # starts the workers (processes) or the threads
        health: list[float] = []
        answers: list[tuple[int, float]] = []
        for number in range(rounds):
            prober = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.door_pool", "probe", url],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert prober.stdout is not None and prober.stdin is not None
            prober.stdout.readline()
            results: list[tuple[int, float]] = []

            def send(tag: str, into: list[tuple[int, float]] = results) -> None:
                into.append(one(tag))

            threads = [threading.Thread(target=send, args=(f"{number}.{i}",)) for i in range(requests)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            prober.stdin.close()
            health.extend(float(line) for line in prober.stdout.read().split())
            prober.wait(timeout=30)
            answers.extend(results)
    finally:
        gateway.terminate()
        gateway.wait(timeout=30)
    seconds = [took for _, took in answers]
    return {
        "kind": kind,
        "statuses": sorted({status for status, _ in answers}),
        "request_s": {"median": statistics.median(seconds), "max": max(seconds)},
        "health_ms": {
            "probes": len(health),
            "p50": percentile(health, 50) * 1000,
            "p99": percentile(health, 99) * 1000,
            "max": max(health) * 1000,
        },
    }


def write(report: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "door_pool.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# Door checks: worker threads or worker processes",
        "",
        f"{report['requests']} concurrent `POST /v1/plans`, each with a distinct catalog of {report['tools']} tools "
        f"({report['catalog_kb']} KB) meta-validated to its last tool; {report['rounds']} rounds; "
        f"`GET /health` timed every 50 ms from a separate process. Load average before: {report['load']}.",
        "",
        "| door.kind | answers | request median / max | /health p50 | p99 | max |",
        "|---|---|---|---|---|---|",
    ]
    for row in report["kinds"]:
        h, r = row["health_ms"], row["request_s"]
        lines.append(
            f"| {row['kind']} | {row['statuses']} | {r['median']:.1f} / {r['max']:.1f} s | {h['p50']:.1f} ms | "
            f"{h['p99']:.1f} ms | {h['max']:.1f} ms |"
        )
    lines += ["", "`python -m benchmarks.door_pool` writes this file."]
    (RESULTS / "door_pool.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--tools", type=int, default=128)
    args = parser.parse_args()
    load = os.getloadavg()
    kinds = [measure(kind, args.rounds, args.requests, args.tools) for kind in ("process", "thread")]
    report = {
        "rounds": args.rounds,
        "requests": args.requests,
        "tools": args.tools,
        "catalog_kb": len(json.dumps(catalog("x", args.tools))) // 1024,
        "load": " / ".join(f"{value:.1f}" for value in load),
        "kinds": kinds,
    }
    write(report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 1 and sys.argv[1] == "probe":
        probe(sys.argv[2])
    else:
        main()

"""Tool-call latency and validity on the visible NESTFUL glaive tools, next to the `planner` model.

Each request of `load_cases("glaive")` (the first N) is offered its own gold tools plus seeded random
distractors up to 6 candidates, and sent through a gateway (started here in front of the running
engine) twice: as an OpenAI tool call with `tool_choice="required"` (the gateway's staged grammars),
and to the `planner` model with the same tools (the plan JSON). Reports per path: latency p50/p95,
validity (tool calls: every call names a candidate and its arguments validate against the tool's
schema; planner: a plan whose nodes all use candidates), the share of gold tools called, and errors.
The first request of each path (grammar compiles, worker start) is sent once before timing.

    python -m benchmarks.toolcall_bench [--n 20] [--engine-url http://127.0.0.1:8001] [--port 8095]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import jsonschema

from benchmarks.gateway_overhead import DEV_KEY, percentile, start_gateway
from benchmarks.nestful import NestfulCase, load_cases, load_tools
from serving.engine.profiles import load_profile
from serving.settings import load_settings

RESULTS = Path(__file__).resolve().parent / "results"
CANDIDATES = 6


def candidates_for(case: NestfulCase, tools: dict[str, dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """The case's gold tools plus seeded distractors up to CANDIDATES, in a seeded order, as OpenAI
    tools (the planstack `output_schema` extension removed, as a plain OpenAI client sends them)."""
    gold = [name for name in dict.fromkeys(node["tool"] for node in case.plan["nodes"]) if name in tools]
    rng = random.Random(seed)
    others = sorted(set(tools) - set(gold))
    names = gold + rng.sample(others, max(0, CANDIDATES - len(gold)))
    rng.shuffle(names)
    out = []
    for name in names:
        function = {k: v for k, v in tools[name]["function"].items() if k != "output_schema"}
        out.append({"type": "function", "function": function})
    return out


def tool_call_outcome(reply: dict[str, Any], offered: dict[str, dict[str, Any]]) -> tuple[bool, list[str]]:
    calls = reply["choices"][0]["message"].get("tool_calls") or []
    names = [call["function"]["name"] for call in calls]
    valid = bool(calls)
    for call in calls:
        name = call["function"]["name"]
        try:
            jsonschema.validate(json.loads(call["function"]["arguments"]), offered[name]["function"]["parameters"])
        except (KeyError, ValueError, jsonschema.ValidationError):
            valid = False
    return valid, names


def planner_outcome(reply: dict[str, Any], offered: dict[str, dict[str, Any]]) -> tuple[bool, list[str]]:
    try:
        nodes = json.loads(reply["choices"][0]["message"]["content"])["nodes"]
    except (KeyError, ValueError, TypeError):
        return False, []
    names = [node.get("tool") for node in nodes]
    return bool(nodes) and all(name in offered for name in names), [str(n) for n in names]


def run(n: int, engine_url: str, port: int) -> dict[str, Any]:
    model = load_profile(load_settings().engine.profile).served_model_name
    tools = {tool["function"]["name"]: tool for tool in load_tools("glaive")}
    cases = [case for case in load_cases("glaive") if all(node["tool"] in tools for node in case.plan["nodes"])][:n]
    gateway = start_gateway(engine_url, port)
    paths = {
        "tool_calls": (model, {"tool_choice": "required"}, tool_call_outcome),
        "planner": ("planner", {}, planner_outcome),
    }
    rows: dict[str, list[dict[str, Any]]] = {path: [] for path in paths}
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        with httpx.Client(timeout=300, headers={"Authorization": f"Bearer {DEV_KEY}"}) as client:
            for index, case in enumerate([cases[0], *cases]):
                offered = candidates_for(case, tools, seed=index)
                by_name = {tool["function"]["name"]: tool for tool in offered}
                gold = {node["tool"] for node in case.plan["nodes"]}
                for path, (served, extra, judge) in paths.items():
                    body = {"model": served, "messages": [{"role": "user", "content": case.request}],
                            "tools": offered, "temperature": 0, **extra}  # fmt: skip
                    started = time.perf_counter()
                    response = client.post(url, json=body)
                    elapsed = (time.perf_counter() - started) * 1000
                    if index == 0:
                        continue  # warm-up: worker start and first grammar compiles
                    row: dict[str, Any] = {"case": case.id, "ms": round(elapsed, 1), "status": response.status_code}
                    if response.status_code == 200:
                        valid, names = judge(response.json(), by_name)
                        row.update(valid=valid, calls=names, gold_called=len(gold & set(names)) / len(gold))
                    else:
                        error = response.json()["error"]["message"][:200]
                        row.update(valid=False, calls=[], gold_called=0.0, error=error)
                    rows[path].append(row)
                print(f"  {index}/{len(cases)}", file=sys.stderr)
    finally:
        gateway.terminate()
        gateway.wait(timeout=20)
    return {"benchmark": "toolcall", "model": model, "n": len(cases), "candidates": CANDIDATES,
            "paths": {path: summary(items) for path, items in rows.items()}, "rows": rows}  # fmt: skip


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ms = [row["ms"] for row in rows]
    return {
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "valid": round(sum(row["valid"] for row in rows) / len(rows), 3),
        "gold_tools_called": round(statistics.fmean(row["gold_called"] for row in rows), 3),
        "mean_calls": round(statistics.fmean(len(row["calls"]) for row in rows), 2),
        "errors": sum(row["status"] != 200 for row in rows),
    }


def to_markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Tool calls vs planner — NESTFUL glaive, {report['n']} requests, {report['candidates']} candidate tools",
        "",
        f"Model `{report['model']}`; shared 2-core CPU machine (other agents running): timings are noisy.",
        "",
        "| path | p50 ms | p95 ms | valid | gold tools called | calls per request | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for path, s in report["paths"].items():
        lines.append(f"| {path} | {s['p50_ms']:,} | {s['p95_ms']:,} | {s['valid']:.0%} | {s['gold_tools_called']:.0%} "
                     f"| {s['mean_calls']} | {s['errors']} |")  # fmt: skip
    lines += ["", "Command: `python -m benchmarks.toolcall_bench --n " + str(report["n"]) + "`", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--engine-url", default="http://127.0.0.1:8001")
    parser.add_argument("--port", type=int, default=8095)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    report = run(args.n, args.engine_url, args.port)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "toolcall.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "toolcall.md").write_text(to_markdown(report))
    print(to_markdown(report))


if __name__ == "__main__":
    main()

"""Scheduler benchmark: parallel vs sequential vs critical-path ideal, and per-node overhead.

    python -m benchmarks.scheduler_bench [--repeats 3] [--out benchmarks/results] [--store-url URL ...]

Simulated tools sleep a fixed time (no engine, no network). For each DAG shape (chain, wide
fan-out, diamond, two-level fan-out/fan-in, random DAG) it measures the wall time of the
DagScheduler with ample parallelism and with `max_parallel=1` (sequential), and compares with the
critical-path ideal: efficiency = ideal / measured (target ≥ 0.9). Scheduler overhead per node is
measured with zero-sleep tools on 99-node plans (target ≤ 1 ms median), in memory and with the
durable run store (a temporary SQLite file, or each `--store-url`, e.g. a PostgreSQL database).
Writes `scheduler.json` and `scheduler.md` and prints the table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from contract.plan import Plan
from executors.config import ExecutorConfig
from executors.registry import ToolRegistry
from executors.runs import RunService
from executors.scheduler import DagScheduler
from executors.stores import RunsConfig, open_run_store, url_scheme

RESULTS_DIR = Path(__file__).resolve().parent / "results"
EFFICIENCY_TARGET = 0.9
OVERHEAD_TARGET_MS = 1.0


def sim_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(timeout_s=30, retries=1)
    async def sim(ms: float, label: str = "") -> dict[str, float]:
        """Sleep `ms` milliseconds (simulated tool)."""
        if ms > 0:
            await asyncio.sleep(ms / 1000.0)
        return {"ms": ms}

    return registry


Shape = dict[str, tuple[float, list[str]]]
"""node id → (sleep ms, upstream ids)."""


def shapes(rng: random.Random) -> dict[str, Shape]:
    chain: Shape = {f"n{i}": (25.0, [f"n{i - 1}"] if i > 1 else []) for i in range(1, 9)}
    fan: Shape = {"n1": (10.0, [])}
    fan |= {f"n{i}": (50.0, ["n1"]) for i in range(2, 42)}
    fan["n42"] = (10.0, [f"n{i}" for i in range(2, 42)])
    diamond: Shape = {"n1": (20.0, []), "n2": (40.0, ["n1"]), "n3": (60.0, ["n1"]), "n4": (20.0, ["n2", "n3"])}
    two: Shape = {"n1": (10.0, [])}
    two |= {f"n{i}": (30.0, ["n1"]) for i in range(2, 10)}
    two["n10"] = (10.0, [f"n{i}" for i in range(2, 10)])
    two |= {f"n{i}": (30.0, ["n10"]) for i in range(11, 19)}
    two["n19"] = (10.0, [f"n{i}" for i in range(11, 19)])
    random_dag: Shape = {}
    for i in range(1, 41):
        earlier = [f"n{j}" for j in range(max(1, i - 8), i)]
        ups = rng.sample(earlier, k=min(len(earlier), rng.randint(0, 3)))
        random_dag[f"n{i}"] = (float(rng.randint(10, 50)), sorted(ups))
    return {
        "chain (8)": chain,
        "wide fan-out (1→40→1)": fan,
        "diamond (4)": diamond,
        "two-level fan-out/fan-in (19)": two,
        "random DAG (40)": random_dag,
    }


def to_plan(shape: Shape) -> Plan:
    nodes = [
        {"id": node_id, "tool": "sim", "args": {"ms": ms, "label": node_id}, "depends_on": ups}
        for node_id, (ms, ups) in shape.items()
    ]
    return Plan.model_validate({"nodes": nodes})


def critical_path_ms(shape: Shape) -> float:
    finish: dict[str, float] = {}
    for node_id, (ms, ups) in shape.items():  # shapes are written in topological order
        finish[node_id] = ms + max((finish[up] for up in ups), default=0.0)
    return max(finish.values())


@dataclass
class ShapeResult:
    shape: str
    nodes: int
    ideal_ms: float
    sum_ms: float
    parallel_ms: float
    sequential_ms: float
    speedup: float
    ideal_speedup: float
    efficiency: float
    meets_target: bool


async def timed_run(scheduler: DagScheduler, plan: Plan) -> float:
    start = time.perf_counter()
    outcome = await scheduler.run_plan(plan)
    elapsed = (time.perf_counter() - start) * 1000.0
    if not outcome.ok:
        raise RuntimeError(f"benchmark plan failed: {outcome.lost}")
    return elapsed


async def measure_shapes(repeats: int) -> list[ShapeResult]:
    registry = sim_registry()
    parallel = DagScheduler(registry, ExecutorConfig(max_parallel=128))
    sequential = DagScheduler(registry, ExecutorConfig(max_parallel=1))
    rows = []
    for name, shape in shapes(random.Random(42)).items():
        plan = to_plan(shape)
        await timed_run(parallel, plan)  # warm-up
        par = statistics.median([await timed_run(parallel, plan) for _ in range(repeats)])
        seq = await timed_run(sequential, plan)
        ideal = critical_path_ms(shape)
        total = sum(ms for ms, _ in shape.values())
        rows.append(
            ShapeResult(
                shape=name,
                nodes=len(shape),
                ideal_ms=round(ideal, 1),
                sum_ms=round(total, 1),
                parallel_ms=round(par, 1),
                sequential_ms=round(seq, 1),
                speedup=round(seq / par, 2),
                ideal_speedup=round(total / ideal, 2),
                efficiency=round(ideal / par, 3),
                meets_target=ideal / par >= EFFICIENCY_TARGET,
            )
        )
    return rows


async def measure_overhead(repeats: int, store_urls: list[str] | None = None) -> dict[str, Any]:
    """Per-node wall time of zero-sleep tools on 99-node plans (chain and fan-out)."""
    registry = sim_registry()
    scheduler = DagScheduler(registry, ExecutorConfig(max_parallel=128, max_steps=1000))
    chain: Shape = {f"n{i}": (0.0, [f"n{i - 1}"] if i > 1 else []) for i in range(1, 100)}
    wide: Shape = {"n1": (0.0, [])} | {f"n{i}": (0.0, ["n1"]) for i in range(2, 100)}
    result: dict[str, Any] = {"nodes_per_plan": 99, "repeats": repeats}
    for name, shape in (("chain", chain), ("fan_out", wide)):
        plan = to_plan(shape)
        await timed_run(scheduler, plan)
        samples = [await timed_run(scheduler, plan) / len(shape) for _ in range(repeats)]
        result[f"in_memory_{name}_ms_per_node"] = round(statistics.median(samples), 4)
    with tempfile.TemporaryDirectory() as tmp:
        for url in store_urls or [f"sqlite://{Path(tmp) / 'bench.sqlite3'}"]:
            store = open_run_store(url, config=RunsConfig(max_plan_nodes=99))
            service = RunService(store, scheduler)
            plan = to_plan(chain)
            samples = []
            try:
                for _ in range(max(3, repeats // 4)):
                    start = time.perf_counter()
                    view = await service.run("bench", "overhead", plan)
                    samples.append((time.perf_counter() - start) * 1000.0 / len(chain))
                    if view.status != "succeeded":
                        raise RuntimeError(f"benchmark run failed: {view.error}")
            finally:
                await service.aclose()
                await store.aclose()
            result[f"{url_scheme(url)}_chain_ms_per_node"] = round(statistics.median(samples), 4)
    result["median_ms_per_node"] = max(result["in_memory_chain_ms_per_node"], result["in_memory_fan_out_ms_per_node"])
    result["meets_target"] = result["median_ms_per_node"] <= OVERHEAD_TARGET_MS
    return result


def markdown(rows: list[ShapeResult], overhead: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = [
        "# Scheduler benchmark",
        "",
        f"Simulated tools with fixed sleeps; {meta['python']} on {meta['machine']}; "
        f"parallel = median of {meta['repeats']} runs. Efficiency = critical-path ideal / measured "
        f"(target ≥ {EFFICIENCY_TARGET}).",
        "",
        "| shape | nodes | ideal ms | sequential ms | parallel ms | speedup | ideal speedup | efficiency |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        mark = "" if r.meets_target else " ✗"
        lines.append(
            f"| {r.shape} | {r.nodes} | {r.ideal_ms:.0f} | {r.sequential_ms:.0f} | {r.parallel_ms:.1f} | "
            f"{r.speedup:.2f}× | {r.ideal_speedup:.2f}× | {r.efficiency:.3f}{mark} |"
        )
    lines += [
        "",
        f"Scheduler overhead per node (zero-sleep tools, {overhead['nodes_per_plan']}-node plans, median of "
        f"{overhead['repeats']}; target ≤ {OVERHEAD_TARGET_MS} ms):",
        "",
        "| measure | ms per node |",
        "|---|---:|",
        f"| chain, in memory | {overhead['in_memory_chain_ms_per_node']:.3f} |",
        f"| fan-out, in memory | {overhead['in_memory_fan_out_ms_per_node']:.3f} |",
    ]
    for key, value in overhead.items():
        if key.endswith("_chain_ms_per_node") and not key.startswith("in_memory"):
            lines.append(f"| chain, durable {key.removesuffix('_chain_ms_per_node')} store + events | {value:.3f} |")
    lines.append("")
    return "\n".join(lines)


async def main_async(repeats: int, out_dir: Path, store_urls: list[str] | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    rows = await measure_shapes(repeats)
    overhead = await measure_overhead(max(repeats * 7, 20), store_urls)
    meta = {
        "python": platform.python_version(),
        "machine": f"{platform.machine()} ({platform.system()})",
        "repeats": repeats,
        "seconds": round(time.perf_counter() - started, 1),
    }
    report = {"meta": meta, "shapes": [asdict(r) for r in rows], "overhead": overhead}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "scheduler.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    text = markdown(rows, overhead, meta)
    (out_dir / "scheduler.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"wrote {out_dir / 'scheduler.json'} and {out_dir / 'scheduler.md'} ({meta['seconds']} s)")
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="Parallel runs per shape (median).")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="Folder for scheduler.{json,md}.")
    parser.add_argument(
        "--store-url",
        action="append",
        help="Run store for the durable overhead row (repeatable): sqlite:///PATH or postgresql://...; "
        "default a temporary SQLite file.",
    )
    args = parser.parse_args(argv)
    asyncio.run(main_async(args.repeats, args.out, args.store_url))


if __name__ == "__main__":
    main()

"""Worst-case cost of a `success_condition` within the bounds of executors/conditions.py.

Evaluates the most expensive conditions the bounded language allows (fan-out 8, sorting,
stringifying, filters) on outputs of just under the input cap (1 MiB of JSON) shaped to stay under
the intermediate-size caps, and, while each runs in the worker process as the scheduler runs it,
measures the event loop's lag with a 5 ms ticker (what a `/health` request would wait).

    python -m benchmarks.condition_worst_case [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from contract.conditions import MAX_FANOUT, condition_problem
from executors.condition_worker import ConditionEvaluator
from executors.conditions import MAX_INPUT_BYTES, MAX_ITEMS, check_condition

EXPRESSIONS = [
    "length([@,@,@,@][]|[@,@][]) > `0`",
    "length(to_string([@,@,@,@,@,@,@,@])) > `0`",
    "length(sort_by([@,@,@,@][]|[@,@][], &to_string(@))) > `0`",
    "length(join(',', [@,@,@,@][]|[@,@][]|[*].to_string(@))) > `0`",
    "length([@,@,@,@][]|[@,@][]|[?contains(to_string(@), 'zz')]) > `0`",
    "max_by([@,@,@,@][]|[@,@][], &length(to_string(@))).n > `0`",
    "[@,@,@,@][]|[@,@][]|sort([*].to_string(@))|length(@) > `0`",
]


def outputs() -> dict[str, Any]:
    """Outputs of about 1 MiB, shaped so that 8× their item count stays under MAX_ITEMS."""
    item = {"id": "x" * 120, "n": 1, "tags": ["a", "b", "c"]}
    per_item = len(json.dumps(item, separators=(",", ":"))) + 1
    count = min((MAX_INPUT_BYTES - 4096) // (per_item + 4), MAX_ITEMS // MAX_FANOUT)
    many_small = [{"id": f"{i:06d}" + "x" * 114, "n": i, "tags": ["a", "b", "c"]} for i in range(count)]
    one_blob = ["y" * (MAX_INPUT_BYTES // 2 - 16)]
    return {"~7k objects (1 MiB)": many_small, "one 512 KiB string": one_blob}


async def lag_while(evaluator: ConditionEvaluator, expression: str | None, output: Any) -> tuple[float, float, bool]:
    """(evaluation seconds, worst event-loop lag in seconds, passed) with the condition in the
    evaluator's worker process, as the scheduler runs it; `expression` None: 0.5 s of idle baseline."""
    worst = 0.0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal worst
        while not done.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.005)
            worst = max(worst, time.perf_counter() - before - 0.005)

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    passed = True
    if expression is None:
        await asyncio.sleep(0.5)
    else:
        passed = (await evaluator.check(expression, output)).passed
    took = time.perf_counter() - started
    done.set()
    await task
    return took, worst, passed


async def measure(expression: str | None, output: Any, repeat: int) -> tuple[list[float], bool]:
    """Loop lags of `repeat` evaluations through one long-lived evaluator (warmed up first)."""
    evaluator = ConditionEvaluator()
    try:
        await evaluator.check("`true`", None)  # the worker starts once per scheduler, not per condition
        lags, passed = [], True
        for _ in range(repeat):
            _, lag, passed = await lag_while(evaluator, expression, output)
            lags.append(lag)
        return lags, passed
    finally:
        evaluator.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    worst_eval = worst_lag = 0.0
    idle, _ = asyncio.run(measure(None, None, args.repeat))
    print(f"idle baseline (no condition, 0.5 s): loop lag max {max(idle) * 1000:.1f} ms\n")
    print("| output | condition | allowed | eval max (ms) | loop lag max (ms) | outcome |")
    print("|---|---|---|---|---|---|")
    for label, output in outputs().items():
        for expression in EXPRESSIONS:
            problem = condition_problem(expression)
            evals = []
            for _ in range(args.repeat):
                sync_start = time.perf_counter()
                check_condition(expression, output)
                evals.append(time.perf_counter() - sync_start)
            lags, passed = asyncio.run(measure(expression, output, args.repeat))
            worst_eval, worst_lag = max(worst_eval, *evals), max(worst_lag, *lags)
            print(
                f"| {label} | `{expression.replace('|', chr(92) + '|')}` | {'yes' if problem is None else 'no'} "
                f"| {max(evals) * 1000:.0f} "
                f"| {max(lags) * 1000:.1f} | {'passed' if passed else 'failed/stopped'} |"
            )
    blowup = "[@,@][]|" * 22 + "length(@)"
    print(f"\nworst evaluation {worst_eval * 1000:.0f} ms; worst event-loop lag {worst_lag * 1000:.1f} ms")
    print(f"the 22-fold doubling condition: {condition_problem(blowup)}")


if __name__ == "__main__":
    main()

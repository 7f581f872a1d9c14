"""Summary statistics of the harness: percentiles, latency summaries, repeats, open-loop arrivals."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError("q must be within [0, 100]")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(values: Sequence[float], digits: int = 4) -> dict[str, float | int | None]:
    """n, mean, p50, p95, p99, min, max of a list of seconds (None when empty)."""

    def r(x: float | None) -> float | None:
        return None if x is None else round(x, digits)

    return {
        "n": len(values),
        "mean": r(statistics.fmean(values)) if values else None,
        "p50": r(percentile(values, 50)),
        "p95": r(percentile(values, 95)),
        "p99": r(percentile(values, 99)),
        "min": r(min(values)) if values else None,
        "max": r(max(values)) if values else None,
    }


def mean_stdev(values: Iterable[Any], digits: int = 4) -> dict[str, float | int | None]:
    """Mean and sample standard deviation of the numeric values (stdev 0.0 for one value)."""
    kept = [float(v) for v in values if isinstance(v, (int, float))]
    if not kept:
        return {"mean": None, "stdev": None, "n": 0}
    stdev = statistics.stdev(kept) if len(kept) > 1 else 0.0
    return {"mean": round(statistics.fmean(kept), digits), "stdev": round(stdev, digits), "n": len(kept)}


def across_repeats(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | int | None]]:
    """Per key, mean ± stdev over repeated runs (keys missing from a run are skipped there)."""
    keys = dict.fromkeys(k for run in runs for k in run)
    numeric = [k for k in keys if any(isinstance(run.get(k), (int, float)) for run in runs)]
    return {k: mean_stdev(run.get(k) for run in runs) for k in numeric}


def poisson_arrivals(rate: float, n: int, seed: int, duration_s: float | None = None) -> list[float]:
    """Send times (seconds from the start) of an open-loop Poisson process: exponential gaps with mean
    1/rate from a seeded generator; at most n arrivals, none at or after duration_s."""
    if rate <= 0:
        raise ValueError("rate must be positive")
    rng = random.Random(seed)
    times: list[float] = []
    t = 0.0
    while len(times) < n:
        t += rng.expovariate(rate)
        if duration_s is not None and t >= duration_s:
            break
        times.append(t)
    return times


def format_pm(cell: Mapping[str, float | int | None] | None, digits: int = 3) -> str:
    """'mean ± stdev' (just the mean for a single run), '–' when missing."""
    if not cell or cell.get("mean") is None:
        return "–"
    mean, stdev, n = cell["mean"], cell.get("stdev"), cell.get("n", 1)
    text = f"{mean:.{digits}f}"
    if n and n > 1 and stdev is not None:
        text += f" ± {stdev:.{digits}f}"
    return text

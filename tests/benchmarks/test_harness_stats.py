"""Percentiles, summaries, repeats and the open-loop arrival schedule of the harness."""

from __future__ import annotations

import statistics

import pytest

from benchmarks.harness.stats import across_repeats, format_pm, mean_stdev, percentile, poisson_arrivals, summarize


def test_percentile_interpolates_linearly_between_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0]  # unsorted on purpose
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 4.0
    assert percentile(values, 50) == pytest.approx(2.5)
    assert percentile(values, 95) == pytest.approx(3.85)  # rank 2.85 between 3 and 4
    assert percentile(list(range(1, 101)), 99) == pytest.approx(99.01)
    assert percentile([7.0], 95) == 7.0 and percentile([], 50) is None
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_summarize_gives_percentiles_mean_and_extremes() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0, 10.0])
    assert s == {"n": 5, "mean": 4.0, "p50": 3.0, "p95": 8.8, "p99": 9.76, "min": 1.0, "max": 10.0}
    assert summarize([])["p95"] is None and summarize([])["n"] == 0


def test_mean_stdev_and_repeats() -> None:
    assert mean_stdev([1.0, 2.0, 3.0, None]) == {"mean": 2.0, "stdev": 1.0, "n": 3}
    assert mean_stdev([5.0]) == {"mean": 5.0, "stdev": 0.0, "n": 1}
    assert mean_stdev([None]) == {"mean": None, "stdev": None, "n": 0}
    runs = [{"p95": 1.0, "ttft": None, "name": "x"}, {"p95": 3.0, "ttft": 0.5, "name": "y"}]
    merged = across_repeats(runs)
    assert merged["p95"] == {"mean": 2.0, "stdev": pytest.approx(1.4142, abs=1e-4), "n": 2}
    assert merged["ttft"] == {"mean": 0.5, "stdev": 0.0, "n": 1} and "name" not in merged
    assert format_pm(merged["p95"]) == "2.000 ± 1.414" and format_pm({"mean": 0.5, "stdev": 0.0, "n": 1}) == "0.500"
    assert format_pm(None) == "–"


def test_poisson_arrivals_are_seeded_and_have_the_target_rate() -> None:
    a, b = poisson_arrivals(2.0, 50, seed=1), poisson_arrivals(2.0, 50, seed=1)
    assert a == b and a != poisson_arrivals(2.0, 50, seed=2)
    assert len(a) == 50 and all(x < y for x, y in zip(a, a[1:], strict=False)) and a[0] > 0
    many = poisson_arrivals(4.0, 20000, seed=3)
    gaps = [y - x for x, y in zip([0.0, *many], many, strict=False)]
    assert statistics.fmean(gaps) == pytest.approx(0.25, rel=0.03)  # mean gap 1/rate
    assert statistics.stdev(gaps) == pytest.approx(0.25, rel=0.05)  # exponential: stdev = mean
    bounded = poisson_arrivals(1.0, 1000, seed=0, duration_s=10.0)
    assert bounded and max(bounded) < 10.0 and len(bounded) < 30
    with pytest.raises(ValueError):
        poisson_arrivals(0.0, 5, seed=0)

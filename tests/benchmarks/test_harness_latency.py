"""The latency harness: phase specs, summary math, and real runs against a gateway in front of the
FAKE upstream (marker fake_upstream): planner-only, end-to-end and chat streaming, closed and open loop."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.latency import LatencyConfig, PhaseSpec, RequestPool, Sample, phase_summary, run_latency
from tests.conftest import KEY_A, FakeStack


class NoProgress:
    def add_task(self, *_: Any, **__: Any) -> int:
        return 0

    def advance(self, *_: Any) -> None:
        return None


def test_phase_specs_parse_and_reject_nonsense() -> None:
    spec = PhaseSpec.parse("chat:c=1,2,4:rate=0.5:n=10:d=60")
    assert (spec.mode, spec.concurrency, spec.rates, spec.requests, spec.duration_s) == (
        "chat",
        (1, 2, 4),
        (0.5,),
        10,
        60.0,
    )
    assert PhaseSpec.parse("planner").concurrency == (1,) and PhaseSpec.parse("e2e:n=3").requests == 3
    for bad in ("train:c=1", "chat:c=0", "chat:x=1", "chat:rate=-1", "chat:c"):
        with pytest.raises(ValueError):
            PhaseSpec.parse(bad)


def test_phase_summary_counts_errors_throughput_and_tokens() -> None:
    samples = [
        Sample(True, "200", 1.0, 0.2, 10, "model"),
        Sample(True, "200", 2.0, 0.4, 20, "fallback"),
        Sample(True, "200", 3.0, 0.6, 30, "model"),
        Sample(False, "429", 0.01),
        Sample(False, "timeout", 5.0),
    ]
    s = phase_summary(samples, wall_s=10.0)
    assert s["n"] == 5 and s["ok"] == 3 and s["error_rate"] == 0.4
    assert s["errors_by_status"] == {"429": 1, "timeout": 1}
    assert s["latency_s"]["p50"] == 2.0 and s["latency_s"]["max"] == 3.0  # failures are not in the latency
    assert s["ttft_s"]["p50"] == 0.4 and s["throughput_rps"] == 0.3 and s["output_tokens_per_s"] == 6.0
    assert s["per_request_tokens_per_s"]["p50"] == pytest.approx(12.5)  # 10/0.8, 20/1.6, 30/2.4
    assert s["paths"] == {"model": 2, "fallback": 1}
    assert s["latency_by_path_s"]["model"]["p50"] == 2.0 and s["latency_by_path_s"]["fallback"]["n"] == 1


def test_request_pool_does_not_repeat_until_exhausted() -> None:
    pool = RequestPool(["a", "b"])
    assert [pool.next(), pool.next()] == ["a", "b"] and not pool.wrapped
    assert pool.next() == "a" and pool.wrapped
    shifted = RequestPool(["a", "b", "c"], offset=1)
    assert [shifted.next() for _ in range(3)] == ["b", "c", "a"] and not shifted.wrapped


@pytest.mark.fake_upstream
def test_latency_against_a_real_gateway(fake_stack: FakeStack) -> None:
    fake_stack.behaviour.delay_s = 0.05
    phases = [
        PhaseSpec.parse("planner:c=1,2:n=2"),
        PhaseSpec.parse("e2e:c=1:n=1"),
        PhaseSpec.parse("chat:c=2:rate=20:n=4"),
    ]
    config = LatencyConfig(fake_stack.gateway.url, phases, KEY_A, "fake-model", warmup=1, seed=3)
    result = asyncio.run(run_latency(config, ["What is the weather in Suzhou on May 17?"], NoProgress()))
    summary = result["summary"]
    assert set(summary) == {
        "planner/closed/c=1",
        "planner/closed/c=2",
        "e2e/closed/c=1",
        "chat/closed/c=2",
        "chat/open/rate=20",
    }
    phases_by_key = {p["key"]: p for p in result["phases"]}
    for key, phase in phases_by_key.items():
        assert phase["summary"]["error_rate"] == 0.0, (key, phase["summary"]["errors_by_status"])
    # the fake upstream cannot write plans: the gateway's planner falls back, and says so
    assert set(phases_by_key["planner/closed/c=1"]["summary"]["paths"]) == {"fallback"}
    assert phases_by_key["e2e/closed/c=1"]["summary"]["paths"] == {"fallback/succeeded": 1}
    chat = phases_by_key["chat/closed/c=2"]["summary"]
    assert chat["ttft_s"]["p50"] >= 0.05 and chat["latency_s"]["p50"] >= chat["ttft_s"]["p50"]
    assert chat["output_tokens_per_s"] > 0  # no usage from the fake: content chunks counted
    assert summary["chat/open/rate=20"]["latency_p95_s"]["n"] == 1 and len(result["warmup"]) == 3


@pytest.mark.fake_upstream
def test_upstream_errors_are_counted_by_status(fake_stack: FakeStack) -> None:
    fake_stack.behaviour.status = 500
    config = LatencyConfig(fake_stack.gateway.url, [PhaseSpec.parse("chat:c=2:n=4")], KEY_A, "fake-model", warmup=0)
    result = asyncio.run(run_latency(config, ["hello"], NoProgress()))
    s = result["phases"][0]["summary"]
    assert s["error_rate"] == 1.0 and s["ok"] == 0 and "200" not in s["errors_by_status"]
    assert sum(s["errors_by_status"].values()) == 4 and result["requests_wrapped"]
    bad_key = LatencyConfig(fake_stack.gateway.url, [PhaseSpec.parse("planner:n=1")], "wrong-key", warmup=0)
    assert asyncio.run(run_latency(bad_key, ["x"], NoProgress()))["phases"][0]["summary"]["errors_by_status"] == {
        "401": 1
    }


def test_unreachable_url_is_a_transport_error(tmp_path: Path) -> None:
    from tests.fakes.upstream import free_port

    config = LatencyConfig(f"http://127.0.0.1:{free_port()}", [PhaseSpec.parse("chat:n=2")], warmup=0, timeout_s=2)
    s = asyncio.run(run_latency(config, ["x"], NoProgress()))["phases"][0]["summary"]
    assert s["errors_by_status"] == {"transport": 2} and s["latency_s"]["p50"] is None

"""The event-loop monitor (serving/loop_monitor.py): CPU work on the loop shows as a busy stretch, a loop
that only waits (descheduled, or blocked without computing) as lag with no busy time. No fakes: the real
monitor on a real asyncio loop."""

from __future__ import annotations

import asyncio
import time

from serving.loop_monitor import monitored_loop
from serving.metrics import GatewayMetrics


class Recorder:
    def __init__(self) -> None:
        self.stretches: list[tuple[float, float]] = []

    def loop_stretch(self, busy_s: float, lag_s: float) -> None:
        self.stretches.append((busy_s, lag_s))


def spin(cpu_s: float) -> None:
    """Compute on this thread until it has used `cpu_s` of CPU time, however loaded the machine is."""
    until = time.thread_time() + cpu_s
    while time.thread_time() < until:
        pass


async def scenario(block: str) -> list[tuple[float, float]]:
    recorder = Recorder()
    async with monitored_loop(recorder, tick_s=0.01):
        await asyncio.sleep(0.05)
        recorder.stretches.clear()
        if block == "cpu":
            spin(0.15)
        else:
            time.sleep(0.15)
        await asyncio.sleep(0.05)
    return recorder.stretches


def test_cpu_work_on_the_loop_is_a_busy_stretch() -> None:
    stretches = asyncio.run(scenario("cpu"))
    busiest = max(busy for busy, _ in stretches)
    assert busiest >= 0.15, stretches  # the whole blocking callback in one stretch
    assert max(lag for _, lag in stretches) >= 0.14


def test_a_loop_that_waits_without_computing_lags_but_is_not_busy() -> None:
    stretches = asyncio.run(scenario("sleep"))
    assert max(lag for _, lag in stretches) >= 0.14, stretches
    assert max(busy for busy, _ in stretches) < 0.1, stretches  # no CPU time was spent in the wait


def test_the_gateway_exports_both_figures() -> None:
    metrics = GatewayMetrics()
    metrics.loop_stretch(0.3, 0.5)
    text = metrics.render().decode()
    assert 'planstack_event_loop_busy_seconds_bucket{le="0.2"} 0.0' in text
    assert 'planstack_event_loop_busy_seconds_bucket{le="0.5"} 1.0' in text
    assert 'planstack_event_loop_lag_seconds_bucket{le="0.5"} 1.0' in text

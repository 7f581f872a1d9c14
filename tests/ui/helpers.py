"""Test tools of the steering and web-UI tests (registered here only, never in product code), and plans."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

from pydantic import BaseModel

from executors.errors import ToolUnavailable
from executors.registry import ToolRegistry
from executors.tools import default_registry


class Echo(BaseModel):
    label: str
    text: str = ""
    price: int = 0


class ToolCalls:
    """Thread-safe call counts of the test tools (the gateway runs in another thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.failures_left: dict[str, int] = {}
        self.released = threading.Event()  # `hold` answers once the test sets it

    def record(self, label: str) -> None:
        with self._lock:
            self.counts[label] += 1

    def fail_next(self, label: str, times: int) -> None:
        with self._lock:
            self.failures_left[label] = times

    def should_fail(self, label: str) -> bool:
        with self._lock:
            left = self.failures_left.get(label, 0)
            if left > 0:
                self.failures_left[label] = left - 1
            return left > 0


def steering_registry(calls: ToolCalls) -> ToolRegistry:
    """The demo tools plus:

    - `book_hotel(hotel, price)`: approval required; records `book:<hotel>`;
    - `nap(label, seconds)`: answers after `seconds` (visible parallelism);
    - `explode(label)`: fails for good (an unexpected exception) while `calls.fail_next(label, n)` says so,
      and always when `label` starts with "always";
    - `flaky(label)`: fails once retryably, then answers (a retried node);
    - `hold(label)`: executes until the test sets `calls.released` (a run that keeps its slot).
    """
    registry = default_registry()

    @registry.tool(version="1", timeout_s=10, approval="required")
    async def book_hotel(hotel: str, price: int) -> Echo:
        """Book and pay a hotel: a person must approve every call."""
        calls.record(f"book:{hotel}")
        return Echo(label=hotel, text=f"booked {hotel}", price=price)

    @registry.tool(version="1", timeout_s=10)
    async def nap(label: str, seconds: float = 0.5) -> Echo:
        """Answer after `seconds`."""
        calls.record(label)
        await asyncio.sleep(min(seconds, 5.0))
        return Echo(label=label, text=f"slept-{label}", price=100)

    @registry.tool(version="1", retries=1)
    async def explode(label: str) -> Echo:
        """Fail with an unexpected exception (while told to)."""
        calls.record(label)
        if label.startswith("always") or calls.should_fail(label):
            raise RuntimeError(f"the {label} backend exploded")
        return Echo(label=label, text=f"fine-{label}")

    @registry.tool(version="1", retries=3)
    async def flaky(label: str) -> Echo:
        """Fail retryably the first time for each label, then answer."""
        calls.record(label)
        if calls.counts[label] == 1:
            raise ToolUnavailable("connection reset (first attempt)")
        return Echo(label=label, text=f"retried-{label}")

    @registry.tool(version="1", timeout_s=60)
    async def hold(label: str) -> Echo:
        """Answer once the test releases it."""
        calls.record(label)
        while not calls.released.is_set():
            await asyncio.sleep(0.02)
        return Echo(label=label, text=f"released-{label}")

    return registry


def booking_plan(hotel: str = "West Lake Inn") -> dict[str, Any]:
    return {
        "nodes": [
            {"id": "n1", "tool": "nap", "args": {"label": "search", "seconds": 0.1}},
            {"id": "n2", "tool": "book_hotel", "args": {"hotel": hotel, "price": "$n1.price"}},
            {"id": "n3", "tool": "nap", "args": {"label": "weather", "seconds": 0.1}},
            {"id": "n4", "tool": "nap", "args": {"label": "$n2.text", "seconds": 0.05}},
        ]
    }


def parallel_failing_plan(fail_label: str = "always-payments") -> dict[str, Any]:
    """Two parallel naps, a retried node, a failing node and its skipped dependant, a fallback."""
    return {
        "nodes": [
            {"id": "n1", "tool": "nap", "args": {"label": "flights", "seconds": 0.8}},
            {"id": "n2", "tool": "nap", "args": {"label": "hotels", "seconds": 0.8}},
            {"id": "n3", "tool": "flaky", "args": {"label": "weather"}},
            {"id": "n4", "tool": "explode", "args": {"label": fail_label}, "depends_on": ["n1"]},
            {"id": "n5", "tool": "nap", "args": {"label": "$n4.text", "seconds": 0.05}},
            {"id": "n6", "tool": "explode", "args": {"label": "always-rates"}, "fallback": "n7"},
            {"id": "n7", "tool": "nap", "args": {"label": "cached-rates", "seconds": 0.05}},
            {"id": "n8", "tool": "nap", "args": {"label": "summary", "seconds": 0.05}, "depends_on": ["n2", "n6"]},
        ]
    }

"""Shared helpers of the executors tests: test tools, a fake sleep, a fake replanner.

Imported by name (`import exec_helpers`): pytest puts this folder on sys.path (rootdir-relative
`prepend` import mode, no __init__.py), and the crash worker adds it itself.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from contract.plan import Plan
from executors.config import ExecutorConfig
from executors.errors import ToolUnavailable
from executors.registry import ToolRegistry
from executors.scheduler import DagScheduler

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def plan_of(*nodes: dict[str, Any]) -> Plan:
    return Plan.model_validate({"nodes": list(nodes)})


class Echo(BaseModel):
    label: str
    value: int
    items: list[int]


class FakeSleep:
    """Records backoff delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


class FlakyState:
    """Per-test mutable state of the flaky tools (failures left, calls made)."""

    def __init__(self, failures: int = 0) -> None:
        self.failures_left = failures
        self.calls: list[str] = []


def make_registry(state: FlakyState | None = None) -> ToolRegistry:
    """Tools for scheduler tests: `echo` (async, optional sleep), `flaky` (fails retryably N times),
    `broken` (non-retryable failure), `sync_echo`, `slow_echo` (slow flag), `hang` (never answers)."""
    registry = ToolRegistry()
    flaky_state = state or FlakyState()

    @registry.tool(version="3", timeout_s=5)
    async def echo(label: str, value: int = 1, sleep_s: float = 0.0, items: list[int] | None = None) -> Echo:
        """Return the arguments after an optional sleep."""
        flaky_state.calls.append(label)
        if sleep_s:
            await asyncio.sleep(sleep_s)
        return Echo(label=label, value=value, items=items or [value])

    @registry.tool(retries=4)
    async def flaky(label: str) -> Echo:
        """Fail with a retryable error while failures are left."""
        flaky_state.calls.append(label)
        if flaky_state.failures_left > 0:
            flaky_state.failures_left -= 1
            raise ToolUnavailable("backend hiccup")
        return Echo(label=label, value=0, items=[])

    @registry.tool(retries=4)
    async def broken(label: str) -> Echo:
        """Always fail with a non-retryable error."""
        flaky_state.calls.append(label)
        raise ValueError("bad input for this tool")

    @registry.tool()
    def sync_echo(label: str, value: int = 1) -> Echo:
        """Synchronous variant of echo (runs in a thread)."""
        flaky_state.calls.append(label)
        return Echo(label=label, value=value, items=[value])

    @registry.tool(slow=True)
    async def slow_echo(label: str, sleep_s: float = 0.02) -> Echo:
        """An echo flagged slow: serialised by the scheduler."""
        flaky_state.calls.append(label)
        await asyncio.sleep(sleep_s)
        return Echo(label=label, value=1, items=[])

    @registry.tool(timeout_s=0.05, retries=2)
    async def hang(label: str) -> Echo:
        """Never answers (until cancelled)."""
        flaky_state.calls.append(label)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return registry


def make_scheduler(registry: ToolRegistry, sleep: FakeSleep | None = None, **config: Any) -> DagScheduler:
    import random

    return DagScheduler(registry, ExecutorConfig(**config), sleep=sleep or FakeSleep(), rng=random.Random(7))


class FakeReplanner:
    """Returns queued plans and records what it was told."""

    def __init__(self, *plans: Plan) -> None:
        self.plans = list(plans)
        self.calls: list[tuple[str, str, dict[str, str]]] = []

    async def replan(self, request: str, failure_summary: str, completed: dict[str, str], *, tenant: str) -> Plan:
        self.calls.append((request, failure_summary, completed))
        return self.plans.pop(0)


def counting_registry(calls_file: Path) -> ToolRegistry:
    """Tools for the crash tests: every call appends its label to `calls_file`; `crash` exits the
    process (os._exit) the first time it runs, `block` prints READY and waits forever the first time."""
    registry = ToolRegistry()
    marker = calls_file.with_suffix(".crashed")

    def record(label: str) -> None:
        with calls_file.open("a", encoding="utf-8") as handle:
            handle.write(label + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    @registry.tool()
    async def step(label: str) -> Echo:
        """Record the call."""
        record(label)
        return Echo(label=label, value=len(label), items=[])

    @registry.tool()
    async def crash(label: str) -> Echo:
        """Record the call, then kill the process the first time."""
        record(label)
        if not marker.exists():
            marker.write_text("crashed")
            os._exit(17)
        return Echo(label=label, value=0, items=[])

    @registry.tool()
    async def block(label: str) -> Echo:
        """Record the call, then announce READY and hang the first time (the test SIGKILLs us)."""
        record(label)
        if not marker.exists():
            marker.write_text("blocked")
            print("READY", flush=True)
            await asyncio.Event().wait()
        return Echo(label=label, value=0, items=[])

    return registry

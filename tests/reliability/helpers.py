"""Shared builders of the reliability tests: hostile-input checks, test tool registries, gateways
over a custom registry (test tools only: nothing is registered in product code)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from contract.plan import Plan
from executors.errors import ToolUnavailable
from executors.registry import ToolRegistry
from executors.tools import default_registry

TRACE_MARKERS = ("Traceback (most recent call last)", 'File "/', "site-packages", "sqlite3.")

TRIP: dict[str, Any] = {
    "nodes": [
        {"id": "n1", "tool": "search_flights", "args": {"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20"}},
        {"id": "n2", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}},
        {"id": "n3", "tool": "check_budget", "args": {"amounts": ["$n1.cheapest.price"], "limit": 5000}},
    ]
}  # fmt: skip
REQUEST = "Flights Shanghai to Hangzhou on June 20 and the weather there."


def plan_of(*nodes: dict[str, Any]) -> Plan:
    return Plan.model_validate({"nodes": list(nodes)})


def check_error_shape(response: httpx.Response) -> None:
    """A non-2xx answer must be the OpenAI error body, with no stack trace or internals in it."""
    for marker in TRACE_MARKERS:
        assert marker not in response.text, f"internals leaked ({marker!r}): {response.text[:300]}"
    if response.status_code < 400:
        return
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


class Echo(BaseModel):
    label: str
    text: str = ""


def record_call(calls_file: Path, label: str) -> None:
    with calls_file.open("a", encoding="utf-8") as handle:
        handle.write(label + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def fault_registry(
    calls_file: Path, *, block_label: str | None = None, release_file: Path | None = None, with_demo: bool = True
) -> ToolRegistry:
    """The demo tools plus test-only tools that count their calls in `calls_file`:

    - `step(label)`: answers at once; `step` with `label == block_label` prints `READY <label>` and
      blocks: forever without `release_file` (the test kills the process then), else until that file
      exists (the test decides when the driver holding the run may go on);
    - `nap(label, seconds)`: answers after `seconds` (a slow tool);
    - `hang(label)`: never answers (0.2 s timeout, 2 attempts);
    - `boom(label)`: raises an unexpected exception (not retried);
    - `flaky_io(label)`: raises OSError (retryable: 3 attempts).
    """
    registry = default_registry() if with_demo else ToolRegistry()

    @registry.tool(version="1", timeout_s=30)
    async def step(label: str) -> Echo:
        """Record the call and echo the label."""
        record_call(calls_file, label)
        if label == block_label:
            print(f"READY {label}", flush=True)
            if release_file is None:
                await asyncio.Event().wait()
            while not release_file.exists():
                await asyncio.sleep(0.05)
        return Echo(label=label, text=f"done-{label}")

    @registry.tool(version="1", timeout_s=30)
    async def nap(label: str, seconds: float = 1.0) -> Echo:
        """Record the call, then take `seconds` (a slow tool)."""
        record_call(calls_file, label)
        await asyncio.sleep(min(seconds, 20.0))
        return Echo(label=label, text=f"slept-{label}")

    @registry.tool(version="1", timeout_s=0.2, retries=2)
    async def hang(label: str) -> Echo:
        """Never answers."""
        record_call(calls_file, label)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    @registry.tool(version="1", retries=3)
    async def boom(label: str) -> Echo:
        """Raise an unexpected exception."""
        record_call(calls_file, label)
        raise RuntimeError("tool bug: division by zero somewhere deep")

    @registry.tool(version="1", retries=3)
    async def flaky_io(label: str) -> Echo:
        """Raise an I/O error, which is retryable."""
        record_call(calls_file, label)
        raise ToolUnavailable("connection reset by the backend")

    return registry


def sse_events(text_lines: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(event type, data) pairs of a run's SSE stream."""
    events: list[tuple[str, dict[str, Any]]] = []
    kind = ""
    for line in text_lines:
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            events.append((kind, json.loads(line[6:])))
    return events

"""Per-tool circuit breakers.

`threshold` consecutive failed calls of a tool open its breaker: for `cooldown_s` every call of
that tool fails fast with `CircuitOpenError`, without reaching the tool. After the cool-down the
breaker is half-open: the next call goes through; a success closes it, a failure opens it again.
Only failures that say something about the tool's health count (timeouts, unavailability,
unexpected exceptions); bad arguments, missing data and false success conditions do not.

Breakers are shared by all runs of one scheduler and live on its event loop (no locks needed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from executors.errors import CircuitOpenError, ExecutorError, ToolExecutionError, ToolUnavailable

BreakerState = Literal["closed", "open", "half_open"]


def counts_against_tool(error: ExecutorError) -> bool:
    """Does this failure say the tool is unhealthy?"""
    return isinstance(error, (ToolUnavailable, ToolExecutionError)) or error.kind == "timeout"


@dataclass
class CircuitBreaker:
    threshold: int
    cooldown_s: float
    clock: Callable[[], float] = time.monotonic
    failures: int = 0
    opened_at: float | None = None

    @property
    def state(self) -> BreakerState:
        if self.opened_at is None:
            return "closed"
        return "half_open" if self.clock() - self.opened_at >= self.cooldown_s else "open"

    def check(self, tool: str) -> None:
        """Raise CircuitOpenError while open; let the call through when closed or half-open."""
        if self.state == "open":
            left = self.cooldown_s - (self.clock() - (self.opened_at or 0.0))
            raise CircuitOpenError(
                f"circuit open for tool {tool!r} after {self.failures} consecutive failures",
                hint=f"retry in {left:.1f} s",
            )

    def record_success(self) -> None:
        self.failures = 0
        self.opened_at = None

    def record_failure(self) -> None:
        self.failures += 1
        if self.failures >= self.threshold:
            self.opened_at = self.clock()


class BreakerBoard:
    """One breaker per tool name, created on first use."""

    def __init__(self, threshold: int, cooldown_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._threshold = threshold
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._breakers: dict[str, CircuitBreaker] = {}

    def for_tool(self, tool: str) -> CircuitBreaker:
        breaker = self._breakers.get(tool)
        if breaker is None:
            breaker = CircuitBreaker(self._threshold, self._cooldown_s, self._clock)
            self._breakers[tool] = breaker
        return breaker

    def states(self) -> dict[str, BreakerState]:
        return {tool: breaker.state for tool, breaker in sorted(self._breakers.items())}

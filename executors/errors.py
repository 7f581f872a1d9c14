"""Typed errors of the executors, and their structured form in node results.

Every failure a node can meet is one of these classes. Each carries `retryable` (the scheduler
retries only those) and a short `type` that ends up in the node result as
`{"error": message, "retryable": bool, "type": type}`. Unknown exceptions raised by a tool are
converted once, in `as_tool_error`, at the boundary between the tool and the scheduler.
"""

from __future__ import annotations

from typing import Any

from contract.errors import PlanstackBaseError


class ExecutorError(PlanstackBaseError):
    """Base class: a message, a stable `type` and whether trying again may help."""

    type: str = "executor_error"

    def structured(self) -> dict[str, Any]:
        """The form stored in node results and events."""
        return {"error": self.explained, "retryable": self.retryable, "type": self.type}


class ToolError(ExecutorError):
    """Raised by a tool (or on its behalf) during a call."""

    type = "tool_error"


class ToolArgumentError(ToolError):
    """The arguments do not match the tool's schema; the tool was not called."""

    type = "invalid_arguments"


class ToolDataNotFound(ToolError):
    """The tool ran but its data has nothing for these arguments (unknown city, venue...)."""

    type = "not_found"


class ToolOutputError(ToolError):
    """The tool returned something that does not match its declared output schema."""

    type = "invalid_output"


class ToolExecutionError(ToolError):
    """The tool raised an unexpected exception (a bug or unknown condition); not retried."""

    type = "tool_exception"


class ToolTimeoutError(ToolError):
    type = "timeout"
    retryable = True


class ToolUnavailable(ToolError):
    """A transient failure (a backend down, a connection reset): worth another attempt."""

    type = "unavailable"
    retryable = True


class CircuitOpenError(ToolUnavailable):
    """The tool's circuit breaker is open: the call fails fast without reaching the tool."""

    type = "circuit_open"
    retryable = False  # not within this run: the breaker stays open for its cool-down


class UnknownToolError(ExecutorError):
    type = "unknown_tool"


class ReferenceResolutionError(ExecutorError):
    """A `$node.field` reference cannot be resolved from the upstream output."""

    type = "reference_error"


class ConditionFailed(ExecutorError):
    """The node's `success_condition` evaluated falsy on its output."""

    type = "condition_failed"


class InvalidCondition(ExecutorError):
    """The `success_condition` is not a valid (or too long) JMESPath expression."""

    type = "invalid_condition"


class UpstreamFailed(ExecutorError):
    """Structured reason of a skipped node: something it waits for failed or was skipped."""

    type = "upstream_failed"


class StepCapReached(ExecutorError):
    type = "step_cap"


class RunTimeout(ExecutorError):
    type = "run_timeout"


class RunNotFound(ExecutorError):
    """No run with this id for this tenant (runs of other tenants are indistinguishable)."""

    type = "not_found"


def as_tool_error(exc: BaseException) -> ExecutorError:
    """Any exception raised inside a tool call, as a typed executor error."""
    if isinstance(exc, ExecutorError):
        return exc
    if isinstance(exc, TimeoutError):
        return ToolTimeoutError("the tool call timed out")
    if isinstance(exc, (ConnectionError, OSError)):
        return ToolUnavailable(f"{type(exc).__name__}: {exc}")
    return ToolExecutionError(f"{type(exc).__name__}: {exc}")


def structured_error(message: str, type_: str, *, retryable: bool = False, **extra: Any) -> dict[str, Any]:
    """A structured error built without an exception (run-level explanations)."""
    return {"error": message, "retryable": retryable, "type": type_, **extra}

"""Typed errors of the executors, and their structured form in node results.

Every failure a node can meet is one of these classes. Each carries `retryable` (the scheduler
retries only those) and a short `kind` that ends up in the node result as
`{"error": message, "retryable": bool, "type": kind}`. Unknown exceptions raised by a tool are
converted once, in `as_tool_error`, at the boundary between the tool and the scheduler.

The errors a run's caller meets (unknown run, plan too large, ...) also declare, like every planstack
error, the HTTP status, OpenAI `type` and `code` the gateway answers with; the `code` of an executor
error is its `kind` unless the class names another.
"""

from __future__ import annotations

from typing import Any

from contract.errors import PlanstackBaseError


class ExecutorError(PlanstackBaseError):
    """Base class: a message, a stable `kind` and whether trying again may help."""

    kind: str = "executor_error"

    def __init__(self, message: str, *, hint: str | None = None, retry_after_s: int | None = None) -> None:
        super().__init__(message, hint=hint, retry_after_s=retry_after_s)
        if self.code is None:
            self.code = self.kind

    def structured(self) -> dict[str, Any]:
        """The form stored in node results and events."""
        return {"error": self.explained, "retryable": self.retryable, "type": self.kind}


class ToolError(ExecutorError):
    """Raised by a tool (or on its behalf) during a call."""

    kind = "tool_error"


class ToolArgumentError(ToolError):
    """The arguments do not match the tool's schema; the tool was not called."""

    kind = "invalid_arguments"


class ToolDataNotFound(ToolError):
    """The tool ran but its data has nothing for these arguments (unknown city, venue...)."""

    kind = "not_found"


class ToolOutputError(ToolError):
    """The tool returned something that does not match its declared output schema."""

    kind = "invalid_output"


class ToolExecutionError(ToolError):
    """The tool raised an unexpected exception (a bug or unknown condition); not retried."""

    kind = "tool_exception"


class ToolTimeoutError(ToolError):
    kind = "timeout"
    retryable = True


class ToolUnavailable(ToolError):
    """A transient failure (a backend down, a connection reset): worth another attempt."""

    kind = "unavailable"
    retryable = True


class CircuitOpenError(ToolUnavailable):
    """The tool's circuit breaker is open: the call fails fast without reaching the tool."""

    kind = "circuit_open"
    retryable = False  # not within this run: the breaker stays open for its cool-down


class UnknownToolError(ExecutorError):
    kind = "unknown_tool"


class ReferenceResolutionError(ExecutorError):
    """A `$node.field` reference cannot be resolved from the upstream output."""

    kind = "reference_error"


class ConditionFailed(ExecutorError):
    """The node's `success_condition` evaluated falsy on its output."""

    kind = "condition_failed"


class InvalidCondition(ExecutorError):
    """The `success_condition` is not a valid (or too long) JMESPath expression."""

    kind = "invalid_condition"


class UpstreamFailed(ExecutorError):
    """Structured reason of a skipped node: something it waits for failed or was skipped."""

    kind = "upstream_failed"


class StepCapReached(ExecutorError):
    kind = "step_cap"


class RunTimeout(ExecutorError):
    kind = "run_timeout"


class RunNotFound(ExecutorError):
    """No run with this id for this tenant (runs of other tenants are indistinguishable)."""

    kind = "not_found"
    status = 404
    type = "invalid_request_error"
    code = "run_not_found"


def as_tool_error(exc: BaseException) -> ExecutorError:
    """Any exception raised inside a tool call, as a typed executor error."""
    if isinstance(exc, ExecutorError):
        return exc
    if isinstance(exc, TimeoutError):
        return ToolTimeoutError("the tool call timed out")
    if isinstance(exc, (ConnectionError, OSError)):
        return ToolUnavailable(f"{type(exc).__name__}: {exc}")
    return ToolExecutionError(f"{type(exc).__name__}: {exc}")


def structured_error(message: str, kind: str, *, retryable: bool = False, **extra: Any) -> dict[str, Any]:
    """A structured error built without an exception (run-level explanations)."""
    return {"error": message, "retryable": retryable, "type": kind, **extra}

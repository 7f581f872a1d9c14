"""The one root of planstack's typed errors, importable from every package (it imports nothing).

Every planstack exception derives from `PlanstackBaseError` (tests/architecture/test_error_root.py
fails on one that does not). Each package keeps its own families (`serving.errors.PlanstackError`,
`executors.errors.ExecutorError`, `planner.llm.LLMError`, `retrieval.errors.RetrievalError`, ...),
and every class says, as class attributes, how the gateway answers it: the HTTP `status`, the
OpenAI error `type` and `code`, the request field it blames (`param`), whether the same call may
succeed later (`retryable`) and when to try again (`retry_after_s`). The gateway's one error funnel
(`serving/errors.py::error_body`) reads those attributes from any of them, so an error is raised as
what it is where it happens, never re-wrapped into a gateway twin on its way out.

The defaults describe an internal failure (500, `server_error`): an error meant for a client names
its status and type. `public_message`, when a class sets it, is what a client is told instead of
`message` (for errors whose own text carries another system's words, such as an engine's).
"""

from __future__ import annotations

# The OpenAI error types planstack answers with (the `type` of every error body).
ERROR_TYPES = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "rate_limit_error",
        "server_error",
        "service_unavailable",
        "timeout",
        "upstream_error",
        "configuration_error",
    }
)


class PlanstackBaseError(Exception):
    """A planstack error: a message, an optional hint at the fix, and how the gateway answers it."""

    status: int = 500
    type: str = "server_error"
    code: str | None = None
    param: str | None = None
    retryable: bool = False
    retry_after_s: int | None = None
    public_message: str | None = None

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        param: str | None = None,
        code: str | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if param is not None:  # else the class's own
            self.param = param
        if code is not None:
            self.code = code
        if retry_after_s is not None:
            self.retry_after_s = retry_after_s

    @property
    def explained(self) -> str:
        """The message followed by the hint in parentheses, when there is one."""
        return self.message if self.hint is None else f"{self.message} ({self.hint})"

"""Typed errors and the one funnel that turns any exception into an OpenAI-shaped error body.

Every error the gateway answers with has the OpenAI shape
`{"error": {"message", "type", "param", "code"}}` and the matching HTTP status; nothing else (no
stack trace, no framework default page, no server file path) ever reaches a client.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from contract.errors import PlanstackBaseError
from planner.llm import LLMBusy, LLMError, LLMTimeout, LLMUnavailable
from serving.redaction import redact_paths

logger = logging.getLogger("planstack.errors")


class PlanstackError(PlanstackBaseError):
    """Base class: an error with an HTTP status, an OpenAI error type and a retry hint."""

    status: int = 500
    type: str = "server_error"
    code: str | None = None
    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        hint: str | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code
        self.hint = hint
        self.retry_after_s = retry_after_s

    def body(self) -> dict[str, Any]:
        message = self.message if self.hint is None else f"{self.message} ({self.hint})"
        error = {"message": redact_paths(message), "type": self.type, "param": self.param, "code": self.code}
        return {"error": error}

    def headers(self) -> dict[str, str]:
        return {} if self.retry_after_s is None else {"Retry-After": str(self.retry_after_s)}


class ConfigError(PlanstackError):
    """The configuration or a profile is invalid; raised at start-up, not per request."""

    type = "configuration_error"


class InvalidRequestError(PlanstackError):
    status = 400
    type = "invalid_request_error"


class SchemaTooComplexError(InvalidRequestError):
    code = "schema_too_complex"


class AuthenticationError(PlanstackError):
    status = 401
    type = "authentication_error"
    code = "invalid_api_key"


class NotFoundError(PlanstackError):
    status = 404
    type = "invalid_request_error"


class ModelNotFoundError(NotFoundError):
    code = "model_not_found"


class PayloadTooLargeError(PlanstackError):
    status = 413
    type = "invalid_request_error"
    code = "request_too_large"


class RateLimitError(PlanstackError):
    status = 429
    type = "rate_limit_error"
    code = "too_many_requests"
    retryable = True


class EngineUnavailableError(PlanstackError):
    status = 503
    type = "service_unavailable"
    code = "engine_unavailable"
    retryable = True


class StoreUnavailableError(PlanstackError):
    """The run store cannot be read or written (disk full, read-only); nothing was half-written."""

    status = 503
    type = "service_unavailable"
    code = "run_store_unavailable"
    retryable = True


class SchemaCheckUnavailableError(PlanstackError):
    """The schema compile check could not run (its worker died and is being restarted)."""

    status = 503
    type = "service_unavailable"
    code = "schema_check_unavailable"
    retryable = True


class EngineTimeoutError(PlanstackError):
    status = 504
    type = "timeout"
    code = "engine_timeout"
    retryable = True


class UpstreamError(PlanstackError):
    """The engine answered with an error; its status and message are relayed, its internals are not."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message, param=param, code=code)
        self.status = status if 400 <= status < 600 else 502
        self.type = "invalid_request_error" if self.status < 500 else "upstream_error"
        self.retryable = self.status >= 500


# The planner's engine errors (planner/llm.py) answer like the chat relay's: 429, 504, 503, else 502.
PLANNER_ENGINE_ERRORS: tuple[tuple[type[LLMError], Callable[[LLMError], PlanstackError]], ...] = (
    (LLMBusy, lambda exc: RateLimitError(exc.message, retry_after_s=1)),
    (LLMTimeout, lambda exc: EngineTimeoutError("the engine did not answer in time")),
    (LLMUnavailable, lambda exc: EngineUnavailableError("the engine is not reachable", retry_after_s=5)),
    (LLMError, lambda exc: UpstreamError(502, "the engine rejected the planner's request")),
)


def planner_engine_error(exc: LLMError) -> PlanstackError:
    return next(to_gateway(exc) for kind, to_gateway in PLANNER_ENGINE_ERRORS if isinstance(exc, kind))


def error_body(exc: BaseException) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Status, OpenAI error body and headers for any exception; unknown ones become a bare 500."""
    if isinstance(exc, LLMError):
        exc = planner_engine_error(exc)
    if isinstance(exc, PlanstackError):
        return exc.status, exc.body(), exc.headers()
    logger.exception("unhandled error", exc_info=exc)
    internal = PlanstackError("internal server error", code="internal_error")
    return internal.status, internal.body(), {}

"""The gateway's own typed errors, and the one funnel that turns any exception into an OpenAI error body.

Every error the gateway answers with has the OpenAI shape
`{"error": {"message", "type", "param", "code"}}` and the matching HTTP status; nothing else (no
stack trace, no framework default page, no server file path) ever reaches a client. Any planstack
error (`contract.errors.PlanstackBaseError`, whichever package raised it) answers with the status,
type, code, param and `Retry-After` its class declares; any other exception is a bare 500.
"""

from __future__ import annotations

import logging
from typing import Any

from contract.errors import PlanstackBaseError
from executors.stores import RunStoreError
from serving.redaction import describe_store_failure, redact_paths

logger = logging.getLogger("planstack.errors")


class PlanstackError(PlanstackBaseError):
    """An error the gateway itself raises (its requests, limits, engine client and configuration)."""


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


class PermissionDeniedError(PlanstackError):
    """The key is valid but may not do this (its scope); `code` says what it lacks."""

    status = 403
    type = "invalid_request_error"
    code = "permission_denied"


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


def public_message(exc: PlanstackBaseError) -> str:
    """What a client is told: the message and its hint, or the class's `public_message` when its own
    text is another system's words. A run-store failure is a typed phrase (disk full, read-only...),
    never SQLite's message or the store's path (both stay in the log)."""
    if isinstance(exc, RunStoreError):
        return f"the run store is unavailable: {describe_store_failure(exc)}"
    return exc.public_message if exc.public_message is not None else exc.explained


def error_body(exc: BaseException) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Status, OpenAI error body and headers for any exception; unknown ones become a bare 500."""
    if not isinstance(exc, PlanstackBaseError):
        logger.exception("unhandled error", exc_info=exc)
        exc = PlanstackError("internal server error", code="internal_error")
    elif exc.status == 500:  # an internal failure, typed: kept in the log like an unknown one
        logger.error("%s answered %d: %s", type(exc).__name__, exc.status, exc.message, exc_info=exc)
    error = {"message": redact_paths(public_message(exc)), "type": exc.type, "param": exc.param, "code": exc.code}
    headers = {} if exc.retry_after_s is None else {"Retry-After": str(exc.retry_after_s)}
    return exc.status, {"error": error}, headers

"""Typed errors of the tool sources.

Everything a remote call can meet is an `executors.errors.ToolError` subclass, so the scheduler's
retry, breaker and result logic treat a remote tool exactly like a local one. Whether a failure may
be retried is decided per call, not per class: a dropped connection is worth another attempt for a
`GET` or a read-only MCP tool, never for a `POST` sent without an idempotency key. Text that comes
from the remote service (an MCP `isError` message, a 4xx body) is untrusted: it is carried, bounded,
as `data` next to planstack's own message, never as the message itself.

`EgressRefused` is also what registration raises for a URL the operator's egress policy refuses;
it carries `status` 400 and `code` "egress_refused" for the gateway's error funnel.
"""

from __future__ import annotations

from typing import Any

from executors.errors import ExecutorError, ToolError, ToolUnavailable

MAX_REMOTE_MESSAGE_CHARS = 2000


def bounded_text(text: str, limit: int = MAX_REMOTE_MESSAGE_CHARS) -> str:
    """`text` cut to `limit` characters (with a marker saying so)."""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


class EgressRefused(ToolError):
    """The operator's egress policy does not allow this destination.

    The message names only what the caller gave (the URL's host and port) and never which addresses
    a name resolved to or whether anything answers there; `reason` has the detail for the
    operator's logs."""

    type = "egress_refused"
    status = 400
    code = "egress_refused"

    def __init__(self, message: str, *, reason: str = "", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason


class RedirectRefused(ToolError):
    """The service answered with a 3xx; redirects are never followed (they could leave the policy)."""

    type = "redirect_refused"


class ResponseTooLarge(ToolError):
    """The response is larger than the configured cap; it was not read to the end."""

    type = "response_too_large"


class RemoteToolError(ToolError):
    """The remote tool ran and reported a failure (MCP `isError`, an HTTP 4xx): not retried.

    `data` holds what the service said (bounded), kept apart from planstack's own message."""

    type = "remote_error"

    def __init__(self, message: str, *, data: dict[str, Any] | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.data: dict[str, Any] = data or {}

    def structured(self) -> dict[str, Any]:
        return {**super().structured(), "data": self.data}


class RemoteUnavailable(ToolUnavailable):
    """The service could not answer now (connection failed, 408/429/5xx).

    `retryable` is set per call: only when sending the call again cannot repeat a side effect.
    `retry_after_s` is the service's `Retry-After` (bounded), for the scheduler's next delay."""

    type = "unavailable"

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after_s: float | None = None,
        data: dict[str, Any] | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.data: dict[str, Any] = data or {}

    def structured(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"data": self.data} if self.data else {}
        if self.retry_after_s is not None:
            extra["retry_after_s"] = self.retry_after_s
        return {**super().structured(), **extra}


class SourceError(ExecutorError):
    """A tool source cannot be listed or used (bad catalog, too many tools, connection failed)."""

    type = "source_error"

    def __init__(self, message: str, *, retryable: bool = False, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.retryable = retryable


class CredentialError(ExecutorError):
    """A sealed credential cannot be opened: tampered with, sealed for another tenant or toolset, or
    sealed under a key this server no longer has. The message never contains the secret."""

    type = "credential_error"

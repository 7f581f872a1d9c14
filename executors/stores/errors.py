"""Typed errors of the run store: unavailable, lease conflicts, quotas. Each carries `retryable` and the
HTTP status, OpenAI `type` and `code` the gateway answers with (the code is the `kind`)."""

from __future__ import annotations

from executors.errors import ExecutorError


class RunStoreError(ExecutorError):
    """The run store cannot be read or written (disk full, read-only, database down). Nothing of the
    failed call was committed; the run stays resumable once the store works again."""

    kind = "store_unavailable"
    status = 503
    type = "service_unavailable"
    code = "run_store_unavailable"
    retryable = True
    retry_after_s = 5


class RunBusy(ExecutorError):
    """Another live driver (this process or another replica) holds the run's lease; `Retry-After` is
    when that lease expires unless renewed."""

    kind = "run_busy"
    status = 409
    type = "invalid_request_error"

    def __init__(self, message: str, *, owner: str | None = None, expires_in_s: float | None = None) -> None:
        super().__init__(
            message,
            hint="follow it with /v1/runs/{id}/events, or resume it once its driver is gone",
            retry_after_s=None if expires_in_s is None else max(1, int(expires_in_s + 0.999)),
        )
        self.owner = owner
        self.expires_in_s = expires_in_s


class LeaseLost(ExecutorError):
    """A fenced write was refused: another driver took the run over. The stale driver stops."""

    kind = "lease_lost"
    status = 409
    type = "invalid_request_error"


class QuotaExceeded(ExecutorError):
    """A per-tenant cap of the run store; `kind` (the error's code) says which. Nothing was written."""

    kind = "quota_exceeded"
    status = 429
    type = "rate_limit_error"
    retryable = True  # once runs finish or are purged
    retry_after_s = 5


class TooManyActiveRuns(QuotaExceeded):
    kind = "too_many_active_runs"


class StoredRunsQuota(QuotaExceeded):
    kind = "stored_runs_quota"


class StoredBytesQuota(QuotaExceeded):
    kind = "stored_bytes_quota"


class ToolsetExists(ExecutorError):
    """The tenant already has a toolset of that name (names are unique per tenant)."""

    kind = "toolset_exists"
    status = 409
    type = "invalid_request_error"
    param = "name"


class TooManyToolsets(ExecutorError):
    """The tenant has as many toolsets as `tools.max_toolsets_per_tenant` allows; nothing was written."""

    kind = "too_many_toolsets"
    status = 409
    type = "invalid_request_error"


class AlreadyAnswered(ExecutorError):
    """The tool call was answered already (by this caller, another one, or its expiry): the first answer
    is kept."""

    kind = "already_answered"
    status = 409
    type = "invalid_request_error"
    param = "node_id"

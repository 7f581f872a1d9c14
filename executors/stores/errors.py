"""Typed errors of the run store: unavailable, lease conflicts, quotas. Each carries `retryable`."""

from __future__ import annotations

from executors.errors import ExecutorError


class RunStoreError(ExecutorError):
    """The run store cannot be read or written (disk full, read-only, database down). Nothing of the
    failed call was committed; the run stays resumable once the store works again."""

    type = "store_unavailable"
    retryable = True


class RunBusy(ExecutorError):
    """Another live driver (this process or another replica) holds the run's lease."""

    type = "run_busy"

    def __init__(self, message: str, *, owner: str | None = None, expires_in_s: float | None = None) -> None:
        super().__init__(message, hint="follow it with /v1/runs/{id}/events, or resume it once its driver is gone")
        self.owner = owner
        self.expires_in_s = expires_in_s


class LeaseLost(ExecutorError):
    """A fenced write was refused: another driver took the run over. The stale driver stops."""

    type = "lease_lost"


class QuotaExceeded(ExecutorError):
    """A per-tenant cap of the run store; `type` says which. Nothing was written."""

    type = "quota_exceeded"
    retryable = True  # once runs finish or are purged


class TooManyActiveRuns(QuotaExceeded):
    type = "too_many_active_runs"


class StoredRunsQuota(QuotaExceeded):
    type = "stored_runs_quota"


class StoredBytesQuota(QuotaExceeded):
    type = "stored_bytes_quota"

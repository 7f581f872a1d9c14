"""The executors' typed run errors as the gateway's (the one place they are mapped)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from executors.errors import RunNotFound
from executors.quotas import PlanTooLarge
from executors.stores import QuotaExceeded, RunBusy, RunStoreError
from serving.errors import (
    NotFoundError,
    PayloadTooLargeError,
    PlanstackError,
    RateLimitError,
    StoreUnavailableError,
)
from serving.redaction import describe_store_failure


class RunBusyError(PlanstackError):
    """Resume of a run that a live driver (this gateway or another replica) is executing."""

    status = 409
    type = "invalid_request_error"
    code = "run_busy"


class RunQuotaError(RateLimitError):
    code = "run_quota_exceeded"


class PlanTooLargeError(PayloadTooLargeError):
    code = "plan_too_large"


def store_unavailable(exc: RunStoreError) -> StoreUnavailableError:
    """A run-store failure as the gateway's 503: a typed phrase, never SQLite's own message or the
    store's path (both stay in the log)."""
    return StoreUnavailableError(f"the run store is unavailable: {describe_store_failure(exc)}", retry_after_s=5)


@contextmanager
def run_errors(run_id: str | None = None) -> Iterator[None]:
    """The executors' typed run errors as the gateway's (the one place they are mapped)."""
    try:
        yield
    except RunNotFound as exc:
        raise NotFoundError(f"run {run_id!r} not found", code="run_not_found") from exc
    except RunBusy as exc:
        retry = None if exc.expires_in_s is None else max(1, int(exc.expires_in_s + 0.999))
        raise RunBusyError(exc.message, hint=exc.hint, retry_after_s=retry) from exc
    except PlanTooLarge as exc:
        raise PlanTooLargeError(exc.message, param="plan") from exc
    except QuotaExceeded as exc:
        raise RunQuotaError(exc.message, hint=exc.hint, code=exc.type, retry_after_s=5) from exc
    except RunStoreError as exc:
        raise store_unavailable(exc) from exc

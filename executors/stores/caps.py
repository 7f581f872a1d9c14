"""Which per-tenant cap a write would break, judged from the tenant's usage (the same for every backend).

A cap is reached, not passed: once a tenant keeps `max_stored_bytes` (its runs, its cache entries
and what it keeps outside the store, `TenantQuota.outside_bytes`: the gateway's demonstrations and
cached catalogs) nothing new is stored for it, and
a write under the cap may take it past by that write's own size, as a new run does.
"""

from __future__ import annotations

from executors.stores.errors import QuotaExceeded, StoredBytesQuota, StoredRunsQuota, TooManyActiveRuns
from executors.stores.records import TenantQuota, TenantUsage

PURGE_HINT = "old runs are purged by retention and plan records expire; lower runs.retention_max_age_s or raise the cap"


def active_runs_error(usage: TenantUsage, quota: TenantQuota) -> TooManyActiveRuns | None:
    """One more run executing (a new one, or one moved back to `running`) would pass the cap."""
    if usage.active_runs < quota.max_active_runs:
        return None
    return TooManyActiveRuns(
        f"{usage.active_runs} runs of this tenant are executing; the limit is {quota.max_active_runs}",
        hint="wait for a run to finish",
    )


def stored_bytes_error(usage: TenantUsage, quota: TenantQuota) -> StoredBytesQuota | None:
    kept = usage.stored_bytes + quota.outside_bytes
    if kept < quota.max_stored_bytes:
        return None
    return StoredBytesQuota(
        f"this tenant keeps {kept} bytes (runs {usage.stored_bytes - usage.cache_bytes}, plan records "
        f"{usage.cache_bytes}, outside the store {quota.outside_bytes}); the limit is {quota.max_stored_bytes}",
        hint=PURGE_HINT,
    )


def new_run_error(usage: TenantUsage, quota: TenantQuota) -> QuotaExceeded | None:
    """The first cap a new run would break, or None."""
    problem = active_runs_error(usage, quota)
    if problem is not None:
        return problem
    if usage.stored_runs >= quota.max_stored_runs:
        return StoredRunsQuota(
            f"this tenant has {usage.stored_runs} stored runs; the limit is {quota.max_stored_runs}",
            hint="old runs are purged by retention; lower runs.retention_max_age_s or raise the cap",
        )
    return stored_bytes_error(usage, quota)

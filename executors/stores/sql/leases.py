"""`RunLeases` in SQL, and the fence every write of a run goes through (written once, both dialects)."""

from __future__ import annotations

from typing import Any

from executors.errors import RunNotFound
from executors.stores.caps import active_runs_error
from executors.stores.errors import LeaseLost
from executors.stores.records import Lease, TenantQuota
from executors.stores.sql.dialect import Lock, Program, Statement
from executors.stores.sql.part import SqlPart
from executors.stores.sql.retention import usage_of
from executors.stores.sql.rows import busy_error

FENCE = "run_id = :run_id AND tenant = :tenant AND lease_owner = :owner AND lease_epoch = :epoch"
"""The lease a write is fenced on: the run's owner and epoch must still be the writer's."""


def fence_params(lease: Lease) -> dict[str, Any]:
    return {"run_id": lease.run_id, "tenant": lease.tenant, "owner": lease.owner, "epoch": lease.epoch}


def require_run(tenant: str, run_id: str) -> Program[None]:
    rows = yield Statement(
        "SELECT 1 FROM runs WHERE run_id = :run_id AND tenant = :tenant", {"run_id": run_id, "tenant": tenant}
    )
    if rows.first() is None:
        raise RunNotFound(f"run {run_id!r} not found")


def within_active_cap(tenant: str, quota: TenantQuota | None) -> Program[None]:
    """Raise `TooManyActiveRuns` when one more run of `tenant` executing would pass its cap (nothing
    with `quota` None). The tenant stays locked until commit (locking it again is harmless), so that
    runs created or moved back to `running` at once are counted one after the other."""
    if quota is None:
        return
    yield Lock(tenant)
    problem = active_runs_error((yield from usage_of(tenant)), quota)
    if problem is not None:
        raise problem


def fence_error(lease: Lease) -> Program[LeaseLost]:
    """Why a fenced write found no row: an unknown run (raises `RunNotFound`), or another driver
    (returns the `LeaseLost` to raise)."""
    yield from require_run(lease.tenant, lease.run_id)
    return LeaseLost(f"run {lease.run_id!r} is driven by another replica now; this driver stops")


TOUCH = f"UPDATE runs SET updated_at = :now, bytes = bytes + :added WHERE {FENCE} RETURNING event_seq, :now"
TOUCH_NEXT_SEQ = (
    "UPDATE runs SET updated_at = :now, bytes = bytes + :added, event_seq = event_seq + 1"
    f" WHERE {FENCE} RETURNING event_seq, :now"
)


def fenced(lease: Lease, added_bytes: int, *, next_seq: bool = False) -> Program[tuple[int, float]]:
    """The guard of a fenced write, in its transaction: touch the run if `lease` still holds it (and
    count `added_bytes`); returns the run's last event number (the next one when `next_seq`) and the
    store's clock."""
    rows = yield Statement(TOUCH_NEXT_SEQ if next_seq else TOUCH, {**fence_params(lease), "added": added_bytes})
    row = rows.first()
    if row is None:
        raise (yield from fence_error(lease))
    return int(row[0]), float(row[1])


def _status(tenant: str, run_id: str) -> Program[str]:
    row = (
        yield Statement(
            "SELECT status FROM runs WHERE run_id = :run_id AND tenant = :tenant", {"run_id": run_id, "tenant": tenant}
        )
    ).first()
    if row is None:
        raise RunNotFound(f"run {run_id!r} not found")
    return str(row[0])


def _acquire(
    tenant: str, run_id: str, owner: str, ttl_s: float, takeover: bool, quota: TenantQuota | None
) -> Program[Lease | None]:
    key = {"run_id": run_id, "tenant": tenant}
    if quota is not None:
        yield Lock(tenant)  # the tenant before the run's row, as everywhere
    row = (
        yield Statement(
            "SELECT status, lease_owner, lease_epoch, lease_expires_at, :now FROM runs"
            " WHERE run_id = :run_id AND tenant = :tenant",
            key,
            lock_rows=True,
        )
    ).first()
    if row is None:
        raise RunNotFound(f"run {run_id!r} not found")
    status, holder, epoch, expires, now = row
    if status != "running":
        return None
    if expires is not None and expires > now:
        raise busy_error(run_id, holder, expires - now)
    yield from within_active_cap(tenant, quota)
    yield Statement(
        "UPDATE runs SET lease_owner = :owner, lease_epoch = :epoch, lease_expires_at = :expires,"
        " takeovers = takeovers + :counted WHERE run_id = :run_id",
        {
            **key,
            "owner": owner,
            "epoch": epoch + 1,
            "expires": now + ttl_s,
            "counted": int(takeover and expires is not None),
        },
    )
    return Lease(tenant, run_id, owner, epoch + 1, now + ttl_s)


def _renew(lease: Lease, ttl_s: float) -> Program[Lease]:
    rows = yield Statement(
        f"UPDATE runs SET lease_expires_at = :now + :ttl_s WHERE {FENCE} RETURNING lease_expires_at",
        {**fence_params(lease), "ttl_s": ttl_s},
    )
    row = rows.first()
    if row is None:
        raise (yield from fence_error(lease))
    return Lease(lease.tenant, lease.run_id, lease.owner, lease.epoch, float(row[0]))


def _release(lease: Lease) -> Program[None]:
    yield Statement(f"UPDATE runs SET lease_expires_at = NULL WHERE {FENCE}", fence_params(lease))


def _orphans(max_takeovers: int, limit: int) -> Program[list[tuple[str, str]]]:
    rows = yield Statement(
        "SELECT tenant, run_id FROM runs WHERE status = 'running'"
        " AND (lease_expires_at IS NULL OR lease_expires_at <= :now) AND takeovers < :max_takeovers"
        " ORDER BY takeovers, updated_at LIMIT :limit",
        {"max_takeovers": max_takeovers, "limit": limit},
    )
    return [(str(row[0]), str(row[1])) for row in rows.rows]


class SqlLeases(SqlPart):
    async def acquire_lease(
        self,
        tenant: str,
        run_id: str,
        *,
        owner: str,
        ttl_s: float,
        takeover: bool = False,
        quota: TenantQuota | None = None,
    ) -> Lease | None:
        if await self.db.read(_status(tenant, run_id)) != "running":
            return None  # a finished run needs no write transaction (a read-only store answers too)
        return await self.db.write(_acquire(tenant, run_id, owner, ttl_s, takeover, quota))

    async def renew_lease(self, lease: Lease, ttl_s: float) -> Lease:
        return await self.db.write(_renew(lease, ttl_s))

    async def release_lease(self, lease: Lease) -> None:
        await self.db.write(_release(lease))

    async def orphaned_runs(self, *, max_takeovers: int, limit: int = 20) -> list[tuple[str, str]]:
        return await self.db.read(_orphans(max_takeovers, limit))

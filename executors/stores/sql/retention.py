"""`RunRetention` in SQL: a tenant's usage (the quotas' input) and the purge (written once, both dialects).

What a tenant keeps, and what the retention total counts, is its runs (`runs.bytes`) and its cache
entries (`cache.bytes`: plan records); expired entries count for nobody and go first at a purge.
"""

from __future__ import annotations

from executors.stores.records import PurgeReport, TenantUsage
from executors.stores.sql.dialect import Program, Statement, in_list
from executors.stores.sql.part import SqlPart
from executors.stores.sql.rows import CHUNK, IDLE, LIVE, add_oldest, runs_to_purge
from executors.stores.sql.schema import RUN_TABLES

TOTAL_BYTES = "SELECT (SELECT COALESCE(SUM(bytes), 0) FROM runs) + (SELECT COALESCE(SUM(bytes), 0) FROM cache)"


def usage_of(tenant: str) -> Program[TenantUsage]:
    row = (
        yield Statement(
            "SELECT COUNT(*), COALESCE(SUM(bytes), 0),"
            f" COALESCE(SUM(CASE WHEN status = 'running' AND {LIVE} THEN 1 ELSE 0 END), 0)"
            " FROM runs WHERE tenant = :tenant",
            {"tenant": tenant},
        )
    ).one()
    cached = (
        yield Statement(
            "SELECT COALESCE(SUM(bytes), 0) FROM cache WHERE tenant = :tenant AND expires_at > :now", {"tenant": tenant}
        )
    ).one()
    cache_bytes = int(cached[0])
    return TenantUsage(
        active_runs=int(row[2]),
        stored_runs=int(row[0]),
        stored_bytes=int(row[1]) + cache_bytes,
        cache_bytes=cache_bytes,
    )


def _total() -> Program[int]:
    return int((yield Statement(TOTAL_BYTES)).one()[0])


def _doomed(max_age_s: float, max_total_bytes: int) -> Program[tuple[dict[str, int], float | None]]:
    """Idle runs past the age limit, then the oldest idle runs and cache entries while over the size
    limit: the runs (id → bytes), and the time up to which cache entries go (None: none)."""
    old = yield Statement(
        f"SELECT run_id, bytes FROM runs WHERE {IDLE} AND updated_at < :now - :max_age_s", {"max_age_s": max_age_s}
    )
    total = yield from _total()
    doomed, excess = runs_to_purge(old.rows, total, max_total_bytes)
    cutoff = None
    if excess > 0:
        runs = yield Statement(f"SELECT run_id, bytes, updated_at FROM runs WHERE {IDLE} ORDER BY updated_at")
        entries = yield Statement("SELECT stored_at, bytes FROM cache ORDER BY stored_at")
        cutoff = add_oldest(doomed, runs.rows, entries.rows, excess)
    return doomed, cutoff


def _delete_runs(run_ids: list[str]) -> Program[None]:
    marks, params = in_list("id", run_ids)
    # checked again inside the transaction (and locked): a run acquired meanwhile is not deleted
    kept = yield Statement(f"SELECT run_id FROM runs WHERE run_id IN {marks} AND {IDLE}", params, lock_rows=True)
    if not kept.rows:
        return
    marks, params = in_list("id", [row[0] for row in kept.rows])
    for table in RUN_TABLES:
        yield Statement(f"DELETE FROM {table} WHERE run_id IN {marks}", params)


def _delete_expired_cache() -> Program[int]:
    return (yield Statement("DELETE FROM cache WHERE expires_at <= :now")).rowcount


def _delete_cache_until(cutoff: float) -> Program[int]:
    return (yield Statement("DELETE FROM cache WHERE stored_at <= :cutoff", {"cutoff": cutoff})).rowcount


class SqlRetention(SqlPart):
    async def usage(self, tenant: str) -> TenantUsage:
        return await self.db.read(usage_of(tenant))

    async def purge(self, *, max_age_s: float, max_total_bytes: int) -> PurgeReport:
        before = await self.db.read(_total())
        cache_deleted = await self.db.write(_delete_expired_cache())
        doomed, cutoff = await self.db.read(_doomed(max_age_s, max_total_bytes))
        ids = list(doomed)
        for start in range(0, len(ids), CHUNK):
            await self.db.write(_delete_runs(ids[start : start + CHUNK]))
        if cutoff is not None:
            cache_deleted += await self.db.write(_delete_cache_until(cutoff))
        after = await self.db.read(_total())
        if ids or cache_deleted:
            await self.db.reclaim()
        return PurgeReport(len(ids), before - after, cache_deleted, after)

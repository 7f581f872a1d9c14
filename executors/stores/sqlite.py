"""`SqliteRunStore`: the embedded default, one SQLite file in WAL mode.

Every call runs on the store's own thread (one connection, one worker), never on the event loop;
each call is one short transaction (`BEGIN IMMEDIATE` for writes). Several processes on one machine
may share the file (SQLite file locking, `busy_timeout`): leases are rows like any other, and a
follower in another process notices new events through the feed's watch tick. The file itself (mode 0600, WAL,
migrations, the worker thread) is `SqliteFile`.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from contract.plan import Plan
from executors.errors import RunNotFound
from executors.observation import NodeResult
from executors.stores.base import RunStore, backend, check_cache_entry
from executors.stores.config import RunsConfig
from executors.stores.errors import LeaseLost
from executors.stores.records import (
    EscalationState,
    EventType,
    Lease,
    PurgeReport,
    RunEvent,
    RunRecord,
    RunStatus,
    TenantQuota,
    TenantUsage,
    WatchState,
    dumps,
)
from executors.stores.sql import (
    EVENT_COLUMNS,
    EVENT_OVERHEAD_BYTES,
    RUN_TABLES,
    SELECT_RUN,
    add_oldest,
    busy_error,
    event_from_row,
    lease_fields,
    list_filter,
    quota_error,
    result_bytes,
    results_query,
    run_from_row,
    run_update,
    runs_to_purge,
    text_bytes,
)
from executors.stores.sqlite_file import SqliteFile, require_run
from executors.stores.sqlite_steering import SqliteSteering

T = TypeVar("T")
_CHUNK = 400  # ids per IN (...) list, well under SQLite's variable limit


@backend
class SqliteRunStore(SqliteSteering, RunStore):
    schemes = ("sqlite",)

    def __init__(
        self, path: str | Path, *, config: RunsConfig | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(config or RunsConfig())
        self.path = str(path)
        self._clock = clock
        self._db = SqliteFile(self.path)

    @classmethod
    def from_url(cls, url: str, config: RunsConfig) -> SqliteRunStore:
        path = url.split("://", 1)[1] if "://" in url else url
        if not path:
            raise ValueError(f"no file in the run store URL {url!r}; use sqlite:///ABSOLUTE/PATH")
        return cls(path, config=config)

    @property
    def display_url(self) -> str:
        return f"sqlite://{self.path}"

    @property
    def _conn(self) -> sqlite3.Connection:
        return self._db.conn

    async def _call(self, fn: Callable[[], T]) -> T:
        return await self._db.call(fn)

    def _tx(self) -> contextlib.AbstractContextManager[sqlite3.Cursor]:
        return self._db.tx()

    def _read(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._db.read()

    async def _close(self) -> None:
        await self._db.aclose()

    def close(self) -> None:
        """Synchronous close, for code outside an event loop."""
        self._db.close()

    # -- runs ------------------------------------------------------------------------------------

    async def create_run(
        self, record: RunRecord, *, owner: str, ttl_s: float, quota: TenantQuota | None = None
    ) -> Lease:
        def go() -> Lease:
            now = self._clock()
            plan_json = record.plan.model_dump_json()
            size = 2 * text_bytes(plan_json) + text_bytes(record.request)
            with self._tx() as cur:
                if quota is not None:
                    problem = quota_error(self._usage(cur, record.tenant, now), quota)
                    if problem is not None:
                        raise problem
                cur.execute(
                    "INSERT INTO runs (run_id, tenant, request, plan_json, status, round, replans, error_json,"
                    " created_at, updated_at, lease_owner, lease_epoch, lease_expires_at, bytes, webhook_url,"
                    " planner_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
                    (record.run_id, record.tenant, record.request, plan_json, record.status, record.round,
                     record.replans, dumps(record.error), now, now, owner, now + ttl_s, size, record.webhook_url,
                     dumps(record.planner)),
                )  # fmt: skip
                cur.execute(
                    "INSERT INTO run_plans (run_id, round, plan_json, created_at) VALUES (?, ?, ?, ?)",
                    (record.run_id, record.round, plan_json, now),
                )
            return Lease(record.tenant, record.run_id, owner, 1, now + ttl_s)

        return await self._call(go)

    async def get_run(self, tenant: str, run_id: str) -> RunRecord | None:
        def go() -> RunRecord | None:
            with self._read() as conn:
                row = conn.execute(SELECT_RUN + " WHERE run_id = ? AND tenant = ?", (run_id, tenant)).fetchone()
            return None if row is None else run_from_row(row, self._clock())

        return await self._call(go)

    async def list_runs(
        self,
        tenant: str,
        *,
        limit: int = 50,
        status: RunStatus | None = None,
        escalation: EscalationState | None = None,
        before: str | None = None,
    ) -> list[RunRecord]:
        where, values = list_filter("?", status=status, escalation=escalation, before=before, tenant=tenant)

        def go() -> list[RunRecord]:
            now = self._clock()
            live = {"running": " AND lease_expires_at > ?", "interrupted": " AND NOT COALESCE(lease_expires_at > ?, 0)"}
            if status in live:
                values.append(now)
            query = SELECT_RUN + " WHERE tenant = ?" + where + live.get(str(status), "")
            with self._read() as conn:
                rows = conn.execute(
                    query + " ORDER BY created_at DESC, run_id DESC LIMIT ?", (tenant, *values, limit)
                ).fetchall()
            return [run_from_row(row, now) for row in rows]

        return await self._call(go)

    async def update_run(
        self,
        lease: Lease,
        *,
        status: RunStatus | None = None,
        plan: Plan | None = None,
        round_: int | None = None,
        replans: int | None = None,
        error: dict[str, Any] | None = None,
        approval: dict[str, Any] | None = None,
        escalation: dict[str, Any] | None = None,
    ) -> RunRecord:
        update = run_update(
            "?", status=status, plan=plan, round_=round_, replans=replans, error=error, approval=approval,
            escalation=escalation,
        )  # fmt: skip

        def go() -> RunRecord:
            now = self._clock()
            with self._tx() as cur:
                self._fence(cur, lease, now, update.added_bytes)
                if update.assignments:
                    cur.execute(
                        f"UPDATE runs SET {', '.join(update.assignments)} WHERE run_id = ?",
                        (*update.values, lease.run_id),
                    )
                if update.plan_json is not None and round_ is not None:
                    cur.execute(
                        "INSERT OR IGNORE INTO run_plans (run_id, round, plan_json, created_at) VALUES (?, ?, ?, ?)",
                        (lease.run_id, round_, update.plan_json, now),
                    )
                row = cur.execute(SELECT_RUN + " WHERE run_id = ?", (lease.run_id,)).fetchone()
            return run_from_row(row, now)

        return await self._call(go)

    async def plans(self, tenant: str, run_id: str) -> list[tuple[int, Plan]]:
        def go() -> list[tuple[int, Plan]]:
            with self._read() as conn:
                require_run(conn, tenant, run_id)
                rows = conn.execute(
                    "SELECT round, plan_json FROM run_plans WHERE run_id = ? ORDER BY round", (run_id,)
                ).fetchall()
            return [(row[0], Plan.model_validate_json(row[1])) for row in rows]

        return await self._call(go)

    # -- node results ----------------------------------------------------------------------------

    async def save_result(self, lease: Lease, result: NodeResult) -> NodeResult:
        def go() -> NodeResult:
            result_json = result.model_dump_json()
            output_json = dumps(result.output)
            with self._tx() as cur:
                self._fence(cur, lease, self._clock(), 0)
                cur.execute(
                    "INSERT INTO node_results (run_id, round, node_id, tool, status, attempts, input_hash,"
                    " output_sha256, output_json, result_json, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (run_id, round, node_id) DO NOTHING",
                    (lease.run_id, result.round, result.node_id, result.tool, result.status, result.attempts,
                     result.input_hash, result.output_sha256, output_json, result_json, self._clock()),
                )  # fmt: skip
                if cur.rowcount == 1:
                    cur.execute(
                        "UPDATE runs SET bytes = bytes + ? WHERE run_id = ?",
                        (result_bytes(result_json, output_json), lease.run_id),
                    )
                    return result
                row = cur.execute(
                    "SELECT result_json FROM node_results WHERE run_id = ? AND round = ? AND node_id = ?",
                    (lease.run_id, result.round, result.node_id),
                ).fetchone()
            return NodeResult.model_validate_json(row[0])

        return await self._call(go)

    async def results(self, tenant: str, run_id: str, *, round_: int | None = None) -> list[NodeResult]:
        query, params = results_query("?", run_id, round_)

        def go() -> list[NodeResult]:
            with self._read() as conn:
                require_run(conn, tenant, run_id)
                rows = conn.execute(query, params).fetchall()
            return [NodeResult.model_validate_json(row[0]) for row in rows]

        return await self._call(go)

    # -- events ----------------------------------------------------------------------------------

    async def append_event(
        self,
        lease: Lease,
        type_: EventType,
        *,
        round_: int = 0,
        node_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> RunEvent:
        event_data = data or {}

        def go() -> RunEvent:
            now = self._clock()
            data_json = dumps(event_data) or "{}"
            with self._tx() as cur:
                seq = self._fence(cur, lease, now, text_bytes(data_json) + EVENT_OVERHEAD_BYTES, next_seq=True)
                cur.execute(
                    "INSERT INTO events (run_id, seq, type, round, node_id, data_json, ts)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (lease.run_id, seq, type_, round_, node_id, data_json, now),
                )
            return RunEvent(
                run_id=lease.run_id, seq=seq, type=type_, round=round_, node_id=node_id, data=event_data, ts=now
            )

        event = await self._call(go)
        self.feed.publish(lease.run_id, event.seq)
        return event

    async def events(self, tenant: str, run_id: str, *, after: int = 0, limit: int = 1000) -> list[RunEvent]:
        def go() -> list[RunEvent]:
            with self._read() as conn:
                require_run(conn, tenant, run_id)
                rows = conn.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                    (run_id, after, limit),
                ).fetchall()
            return [event_from_row(row) for row in rows]

        return await self._call(go)

    # -- leases ----------------------------------------------------------------------------------

    async def acquire_lease(
        self, tenant: str, run_id: str, *, owner: str, ttl_s: float, takeover: bool = False
    ) -> Lease | None:
        def go() -> Lease | None:
            now = self._clock()
            with self._read() as conn:  # a finished run needs no write transaction (read-only stores too)
                require_run(conn, tenant, run_id)
                if conn.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0] != "running":
                    return None
            with self._tx() as cur:
                row = cur.execute(
                    "SELECT status, lease_owner, lease_epoch, lease_expires_at FROM runs"
                    " WHERE run_id = ? AND tenant = ?",
                    (run_id, tenant),
                ).fetchone()
                if row is None:
                    raise RunNotFound(f"run {run_id!r} not found")
                status, holder, epoch, expires = row
                if status != "running":
                    return None
                if expires is not None and expires > now:
                    raise busy_error(run_id, holder, expires - now)
                counted = 1 if takeover and expires is not None else 0
                cur.execute(
                    "UPDATE runs SET lease_owner = ?, lease_epoch = ?, lease_expires_at = ?,"
                    " takeovers = takeovers + ? WHERE run_id = ?",
                    (owner, epoch + 1, now + ttl_s, counted, run_id),
                )
            return Lease(tenant, run_id, owner, epoch + 1, now + ttl_s)

        return await self._call(go)

    async def renew_lease(self, lease: Lease, ttl_s: float) -> Lease:
        def go() -> Lease:
            now = self._clock()
            with self._tx() as cur:
                cur.execute("UPDATE runs SET lease_expires_at = ?" + _FENCE, (now + ttl_s, *lease_fields(lease)))
                if cur.rowcount != 1:
                    self._fence_failure(cur, lease)
            return Lease(lease.tenant, lease.run_id, lease.owner, lease.epoch, now + ttl_s)

        return await self._call(go)

    async def release_lease(self, lease: Lease) -> None:
        def go() -> None:
            with self._tx() as cur:
                cur.execute("UPDATE runs SET lease_expires_at = NULL" + _FENCE, lease_fields(lease))

        await self._call(go)

    async def orphaned_runs(self, *, max_takeovers: int, limit: int = 20) -> list[tuple[str, str]]:
        def go() -> list[tuple[str, str]]:
            with self._read() as conn:
                rows = conn.execute(
                    "SELECT tenant, run_id FROM runs WHERE status = 'running'"
                    " AND (lease_expires_at IS NULL OR lease_expires_at <= ?) AND takeovers < ?"
                    " ORDER BY takeovers, updated_at LIMIT ?",
                    (self._clock(), max_takeovers, limit),
                ).fetchall()
            return [(row[0], row[1]) for row in rows]

        return await self._call(go)

    def _fence(self, cur: sqlite3.Cursor, lease: Lease, now: float, added_bytes: int, next_seq: bool = False) -> int:
        """The fenced write's guard, in the caller's transaction; returns the next event seq if asked."""
        bump = ", event_seq = event_seq + 1" if next_seq else ""
        row = cur.execute(
            f"UPDATE runs SET updated_at = ?, bytes = bytes + ?{bump}" + _FENCE + " RETURNING event_seq",
            (now, added_bytes, *lease_fields(lease)),
        ).fetchone()
        if row is None:
            self._fence_failure(cur, lease)
        return int(row[0])

    @staticmethod
    def _fence_failure(cur: sqlite3.Cursor, lease: Lease) -> NoReturn:
        require_run(cur, lease.tenant, lease.run_id)
        raise LeaseLost(f"run {lease.run_id!r} is driven by another replica now; this driver stops")

    # -- quotas and retention --------------------------------------------------------------------

    def _usage(self, conn: sqlite3.Cursor | sqlite3.Connection, tenant: str, now: float) -> TenantUsage:
        row = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(bytes), 0), COALESCE(SUM(CASE WHEN status = 'running'"
            " AND lease_expires_at > ? THEN 1 ELSE 0 END), 0) FROM runs WHERE tenant = ?",
            (now, tenant),
        ).fetchone()
        return TenantUsage(active_runs=int(row[2]), stored_runs=int(row[0]), stored_bytes=int(row[1]))

    async def usage(self, tenant: str) -> TenantUsage:
        def go() -> TenantUsage:
            with self._read() as conn:
                return self._usage(conn, tenant, self._clock())

        return await self._call(go)

    async def purge(self, *, max_age_s: float, max_total_bytes: int) -> PurgeReport:
        def go() -> PurgeReport:
            now = self._clock()
            idle = "(status != 'running' OR lease_expires_at IS NULL OR lease_expires_at <= ?)"
            with self._read() as conn:
                old = conn.execute(
                    f"SELECT run_id, bytes FROM runs WHERE {idle} AND updated_at < ?",
                    (now, now - max_age_s),
                ).fetchall()
                total = int(conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM runs").fetchone()[0])
            doomed, excess = runs_to_purge(old, total, max_total_bytes)
            if excess > 0:
                with self._read() as conn:
                    oldest = conn.execute(f"SELECT run_id, bytes FROM runs WHERE {idle} ORDER BY updated_at", (now,))
                    add_oldest(doomed, oldest, excess)
            ids = list(doomed)
            for start in range(0, len(ids), _CHUNK):
                self._delete_runs(ids[start : start + _CHUNK], now)
            with self._tx() as cur:
                cur.execute("DELETE FROM cache WHERE expires_at <= ?", (now,))
                cache_deleted = cur.rowcount
            with self._read() as conn:
                after = int(conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM runs").fetchone()[0])
                if ids:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return PurgeReport(len(ids), total - after, cache_deleted, after)

        return await self._call(go)

    def _delete_runs(self, run_ids: list[str], now: float) -> None:
        marks = ", ".join("?" * len(run_ids))
        live = "AND (status != 'running' OR lease_expires_at IS NULL OR lease_expires_at <= ?)"
        with self._tx() as cur:
            kept = [
                row[0]
                for row in cur.execute(f"SELECT run_id FROM runs WHERE run_id IN ({marks}) {live}", (*run_ids, now))
            ]  # re-checked inside the transaction: a run acquired meanwhile is not deleted
            if not kept:
                return
            marks = ", ".join("?" * len(kept))
            for table in RUN_TABLES:
                cur.execute(f"DELETE FROM {table} WHERE run_id IN ({marks})", kept)

    # -- tenant-scoped cache ---------------------------------------------------------------------

    async def cache_get(self, namespace: str, tenant: str, key: str) -> str | None:
        check_cache_entry(namespace, tenant, key)

        def go() -> str | None:
            with self._read() as conn:
                row = conn.execute(
                    "SELECT value FROM cache WHERE namespace = ? AND tenant = ? AND key = ? AND expires_at > ?",
                    (namespace, tenant, key, self._clock()),
                ).fetchone()
            return None if row is None else str(row[0])

        return await self._call(go)

    async def cache_put(self, namespace: str, tenant: str, key: str, value: str, ttl_s: float) -> None:
        check_cache_entry(namespace, tenant, key, value, ttl_s)

        def go() -> None:
            with self._tx() as cur:
                cur.execute(
                    "INSERT INTO cache (namespace, tenant, key, value, expires_at) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (namespace, tenant, key) DO UPDATE SET value = excluded.value,"
                    " expires_at = excluded.expires_at",
                    (namespace, tenant, key, value, self._clock() + ttl_s),
                )

        await self._call(go)

    # -- feed ------------------------------------------------------------------------------------

    async def _watch_state(self, run_ids: list[str]) -> dict[str, WatchState]:
        def go() -> dict[str, WatchState]:
            now = self._clock()
            states: dict[str, WatchState] = {}
            with self._read() as conn:
                for start in range(0, len(run_ids), _CHUNK):
                    chunk = run_ids[start : start + _CHUNK]
                    marks = ", ".join("?" * len(chunk))
                    for run_id, seq, status, expires in conn.execute(
                        f"SELECT run_id, event_seq, status, lease_expires_at FROM runs WHERE run_id IN ({marks})",
                        chunk,
                    ):
                        states[run_id] = WatchState(int(seq), expires is not None and expires > now, status)
            return states

        return await self._call(go)


_FENCE = " WHERE run_id = ? AND tenant = ? AND lease_owner = ? AND lease_epoch = ?"

"""`PostgresRunStore`: runs of several gateway replicas in one PostgreSQL database.

psycopg 3 with its async connection pool; every call is one transaction. Times (created, updated,
lease expiry) come from the database server's clock, so replicas agree on which lease is live.
Each appended event is also a `NOTIFY planstack_events, '<run id>:<seq>'` sent on commit; every
gateway LISTENs on one dedicated connection and wakes the followers of that run at once. Creating a
run takes a per-tenant advisory lock, so the quota check and the insert are one atomic step across
replicas. The connections, the schema and the LISTEN connection are `PostgresPool`'s; the store belongs to
the event loop that first used it (the pool's connections do).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, NoReturn

import psycopg

from contract.plan import Plan
from executors.errors import RunNotFound
from executors.observation import NodeResult
from executors.stores.base import RunStore, backend, check_cache_entry
from executors.stores.config import RunsConfig
from executors.stores.errors import LeaseLost, RunStoreError
from executors.stores.feed import Listener
from executors.stores.postgres_pool import CHANNEL, PostgresPool
from executors.stores.records import (
    EscalationState,
    EventType,
    Lease,
    PurgeReport,
    ReopenFrom,
    RunEvent,
    RunRecord,
    RunStatus,
    TenantQuota,
    TenantUsage,
    WatchState,
    WebhookDelivery,
    dumps,
)
from executors.stores.sql import (
    DELIVERY_COLUMNS,
    EVENT_COLUMNS,
    EVENT_OVERHEAD_BYTES,
    REOPEN_CONDITIONS,
    RUN_COLUMNS,
    RUN_TABLES,
    add_oldest,
    busy_error,
    delivery_from_row,
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

logger = logging.getLogger("planstack.executors.stores.postgres")

NOW = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
SELECT_RUN = f"SELECT {RUN_COLUMNS}, {NOW} FROM runs"
FENCE = " WHERE run_id = %s AND tenant = %s AND lease_owner = %s AND lease_epoch = %s"
IDLE = f"(status <> 'running' OR lease_expires_at IS NULL OR lease_expires_at <= {NOW})"


@backend
class PostgresRunStore(RunStore):
    schemes = ("postgresql", "postgres")

    def __init__(self, url: str, *, config: RunsConfig | None = None) -> None:
        self.url = url
        self._db = PostgresPool(url, config or RunsConfig())  # before the base class asks for _listener
        super().__init__(self._db.config)

    def _tx(self, what: str = "write") -> contextlib.AbstractAsyncContextManager[psycopg.AsyncCursor[Any]]:
        return self._db.tx(what)

    async def _close(self) -> None:
        await self._db.aclose()

    @classmethod
    def from_url(cls, url: str, config: RunsConfig) -> PostgresRunStore:
        return cls(url, config=config)

    @property
    def display_url(self) -> str:
        return self._db.display_url

    # -- runs ------------------------------------------------------------------------------------

    async def create_run(
        self, record: RunRecord, *, owner: str, ttl_s: float, quota: TenantQuota | None = None
    ) -> Lease:
        plan_json = record.plan.model_dump_json()
        size = 2 * text_bytes(plan_json) + text_bytes(record.request)
        async with self._tx() as cur:
            if quota is not None:
                await cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (record.tenant,))
                problem = quota_error(await _usage(cur, record.tenant), quota)
                if problem is not None:
                    raise problem
            await cur.execute(
                "INSERT INTO runs (run_id, tenant, request, plan_json, status, round, replans, error_json, created_at,"
                " updated_at, lease_owner, lease_epoch, lease_expires_at, bytes, webhook_url, planner_json)"
                f" VALUES (%s, %s, %s, %s, %s, %s, %s, %s, {NOW}, {NOW}, %s, 1, {NOW} + %s, %s, %s, %s)"
                " RETURNING lease_expires_at, created_at",
                (record.run_id, record.tenant, record.request, plan_json, record.status, record.round,
                 record.replans, dumps(record.error), owner, ttl_s, size, record.webhook_url,
                 dumps(record.planner)),
            )  # fmt: skip
            expires, created = await _one(cur)
            await cur.execute(
                "INSERT INTO run_plans (run_id, round, plan_json, created_at) VALUES (%s, %s, %s, %s)",
                (record.run_id, record.round, plan_json, created),
            )
        return Lease(record.tenant, record.run_id, owner, 1, float(expires))

    async def get_run(self, tenant: str, run_id: str) -> RunRecord | None:
        async with self._tx("read") as cur:
            await cur.execute(SELECT_RUN + " WHERE run_id = %s AND tenant = %s", (run_id, tenant))
            row = await cur.fetchone()
        return None if row is None else run_from_row(row, row[-1])

    async def list_runs(
        self,
        tenant: str,
        *,
        limit: int = 50,
        status: RunStatus | None = None,
        escalation: EscalationState | None = None,
        before: str | None = None,
    ) -> list[RunRecord]:
        where, values = list_filter("%s", status=status, escalation=escalation, before=before, tenant=tenant)
        if status == "running":
            where += f" AND lease_expires_at > {NOW}"
        elif status == "interrupted":
            where += f" AND NOT COALESCE(lease_expires_at > {NOW}, false)"
        async with self._tx("read") as cur:
            await cur.execute(
                SELECT_RUN + " WHERE tenant = %s" + where + " ORDER BY created_at DESC, run_id DESC LIMIT %s",
                (tenant, *values, limit),
            )
            rows = await cur.fetchall()
        return [run_from_row(row, row[-1]) for row in rows]

    async def awaiting_runs(self, *, limit: int = 100) -> list[RunRecord]:
        async with self._tx("read") as cur:
            await cur.execute(SELECT_RUN + " WHERE status = 'awaiting_approval' ORDER BY updated_at LIMIT %s", (limit,))
            rows = await cur.fetchall()
        return [run_from_row(row, row[-1]) for row in rows]

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
            "%s", status=status, plan=plan, round_=round_, replans=replans, error=error, approval=approval,
            escalation=escalation,
        )  # fmt: skip
        async with self._tx() as cur:
            await self._fence(cur, lease, update.added_bytes)
            if update.assignments:
                await cur.execute(
                    f"UPDATE runs SET {', '.join(update.assignments)} WHERE run_id = %s", (*update.values, lease.run_id)
                )
            if update.plan_json is not None and round_ is not None:
                await cur.execute(
                    f"INSERT INTO run_plans (run_id, round, plan_json, created_at) VALUES (%s, %s, %s, {NOW})"
                    " ON CONFLICT DO NOTHING",
                    (lease.run_id, round_, update.plan_json),
                )
            await cur.execute(SELECT_RUN + " WHERE run_id = %s", (lease.run_id,))
            row = await _one(cur)
        return run_from_row(row, row[-1])

    async def reopen(
        self,
        tenant: str,
        run_id: str,
        *,
        owner: str,
        ttl_s: float,
        expect: ReopenFrom,
        approval: dict[str, Any] | None = None,
        escalation: dict[str, Any] | None = None,
        plan: Plan | None = None,
        round_: int | None = None,
        replans: int | None = None,
        budget_round: int | None = None,
    ) -> Lease | None:
        update = run_update(
            "%s", status="running", plan=plan, round_=round_, replans=replans, error=None, approval=approval,
            escalation=escalation, budget_round=budget_round,
        )  # fmt: skip
        async with self._tx() as cur:
            await _require_run(cur, tenant, run_id)
            await cur.execute(
                f"UPDATE runs SET {', '.join(update.assignments)}, error_json = NULL, lease_owner = %s,"
                f" lease_epoch = lease_epoch + 1, lease_expires_at = {NOW} + %s, updated_at = {NOW},"
                " bytes = bytes + %s"
                f" WHERE run_id = %s AND tenant = %s AND {REOPEN_CONDITIONS[expect]}"
                " RETURNING lease_epoch, lease_expires_at",
                (*update.values, owner, ttl_s, update.added_bytes, run_id, tenant),
            )
            row = await cur.fetchone()
            if row is None:
                return None
            if update.plan_json is not None and round_ is not None:
                await cur.execute(
                    f"INSERT INTO run_plans (run_id, round, plan_json, created_at) VALUES (%s, %s, %s, {NOW})"
                    " ON CONFLICT DO NOTHING",
                    (run_id, round_, update.plan_json),
                )
        return Lease(tenant, run_id, owner, int(row[0]), float(row[1]))

    async def close_escalation(self, tenant: str, run_id: str, escalation: dict[str, Any]) -> bool:
        async with self._tx() as cur:
            await _require_run(cur, tenant, run_id)
            await cur.execute(
                f"UPDATE runs SET escalation = %s, escalation_json = %s, updated_at = {NOW}"
                " WHERE run_id = %s AND tenant = %s AND " + REOPEN_CONDITIONS["escalated"],
                (str(escalation.get("state", "closed")), dumps(escalation), run_id, tenant),
            )
            return cur.rowcount == 1

    async def plans(self, tenant: str, run_id: str) -> list[tuple[int, Plan]]:
        async with self._tx("read") as cur:
            await _require_run(cur, tenant, run_id)
            await cur.execute("SELECT round, plan_json FROM run_plans WHERE run_id = %s ORDER BY round", (run_id,))
            rows = await cur.fetchall()
        return [(row[0], Plan.model_validate_json(row[1])) for row in rows]

    # -- node results ----------------------------------------------------------------------------

    async def save_result(self, lease: Lease, result: NodeResult) -> NodeResult:
        result_json = result.model_dump_json()
        output_json = dumps(result.output)
        async with self._tx() as cur:
            await self._fence(cur, lease, 0)
            await cur.execute(
                "INSERT INTO node_results (run_id, round, node_id, tool, status, attempts, input_hash,"
                f" output_sha256, output_json, result_json, committed_at)"
                f" VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, {NOW})"
                " ON CONFLICT (run_id, round, node_id) DO NOTHING",
                (lease.run_id, result.round, result.node_id, result.tool, result.status, result.attempts,
                 result.input_hash, result.output_sha256, output_json, result_json),
            )  # fmt: skip
            if cur.rowcount == 1:
                await cur.execute(
                    "UPDATE runs SET bytes = bytes + %s WHERE run_id = %s",
                    (result_bytes(result_json, output_json), lease.run_id),
                )
                return result
            await cur.execute(
                "SELECT result_json FROM node_results WHERE run_id = %s AND round = %s AND node_id = %s",
                (lease.run_id, result.round, result.node_id),
            )
            row = await _one(cur)
        return NodeResult.model_validate_json(row[0])

    async def results(self, tenant: str, run_id: str, *, round_: int | None = None) -> list[NodeResult]:
        query, params = results_query("%s", run_id, round_)
        async with self._tx("read") as cur:
            await _require_run(cur, tenant, run_id)
            await cur.execute(query, params)
            rows = await cur.fetchall()
        return [NodeResult.model_validate_json(row[0]) for row in rows]

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
        data_json = dumps(event_data) or "{}"
        async with self._tx() as cur:
            seq = await self._fence(cur, lease, text_bytes(data_json) + EVENT_OVERHEAD_BYTES, next_seq=True)
            await cur.execute(
                "INSERT INTO events (run_id, seq, type, round, node_id, data_json, ts)"
                f" VALUES (%s, %s, %s, %s, %s, %s, {NOW}) RETURNING ts",
                (lease.run_id, seq, type_, round_, node_id, data_json),
            )
            (ts,) = await _one(cur)
            await cur.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{lease.run_id}:{seq}"))
        self.feed.publish(lease.run_id, seq)
        return RunEvent(run_id=lease.run_id, seq=seq, type=type_, round=round_, node_id=node_id, data=event_data, ts=ts)

    async def events(self, tenant: str, run_id: str, *, after: int = 0, limit: int = 1000) -> list[RunEvent]:
        async with self._tx("read") as cur:
            await _require_run(cur, tenant, run_id)
            await cur.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = %s AND seq > %s ORDER BY seq LIMIT %s",
                (run_id, after, limit),
            )
            rows = await cur.fetchall()
        return [event_from_row(row) for row in rows]

    # -- webhook deliveries ----------------------------------------------------------------------

    async def save_delivery(self, tenant: str, run_id: str, delivery: WebhookDelivery) -> None:
        async with self._tx() as cur:
            await _require_run(cur, tenant, run_id)
            await cur.execute(
                f"INSERT INTO webhook_deliveries (run_id, {DELIVERY_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (run_id, seq) DO UPDATE SET state = excluded.state, attempts = excluded.attempts,"
                " status_code = excluded.status_code, error = excluded.error, updated_at = excluded.updated_at",
                (run_id, delivery.seq, delivery.event, delivery.state, delivery.attempts, delivery.status_code,
                 delivery.error, delivery.updated_at),
            )  # fmt: skip

    async def deliveries(self, tenant: str, run_id: str) -> list[WebhookDelivery]:
        async with self._tx("read") as cur:
            await _require_run(cur, tenant, run_id)
            await cur.execute(
                f"SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE run_id = %s ORDER BY seq", (run_id,)
            )
            rows = await cur.fetchall()
        return [delivery_from_row(row) for row in rows]

    # -- leases ----------------------------------------------------------------------------------

    async def acquire_lease(
        self, tenant: str, run_id: str, *, owner: str, ttl_s: float, takeover: bool = False
    ) -> Lease | None:
        async with self._tx() as cur:
            await cur.execute(
                f"SELECT status, lease_owner, lease_epoch, lease_expires_at, {NOW} FROM runs"
                " WHERE run_id = %s AND tenant = %s FOR UPDATE",
                (run_id, tenant),
            )
            row = await cur.fetchone()
            if row is None:
                raise RunNotFound(f"run {run_id!r} not found")
            status, holder, epoch, expires, now = row
            if status != "running":
                return None
            if expires is not None and expires > now:
                raise busy_error(run_id, holder, expires - now)
            counted = 1 if takeover and expires is not None else 0
            await cur.execute(
                "UPDATE runs SET lease_owner = %s, lease_epoch = %s, lease_expires_at = %s,"
                " takeovers = takeovers + %s WHERE run_id = %s",
                (owner, epoch + 1, now + ttl_s, counted, run_id),
            )
        return Lease(tenant, run_id, owner, epoch + 1, now + ttl_s)

    async def renew_lease(self, lease: Lease, ttl_s: float) -> Lease:
        async with self._tx() as cur:
            await cur.execute(
                f"UPDATE runs SET lease_expires_at = {NOW} + %s" + FENCE + " RETURNING lease_expires_at",
                (ttl_s, *lease_fields(lease)),
            )
            row = await cur.fetchone()
            if row is None:
                await _fence_failure(cur, lease)
        return Lease(lease.tenant, lease.run_id, lease.owner, lease.epoch, float(row[0]))

    async def release_lease(self, lease: Lease) -> None:
        async with self._tx() as cur:
            await cur.execute("UPDATE runs SET lease_expires_at = NULL" + FENCE, lease_fields(lease))

    async def orphaned_runs(self, *, max_takeovers: int, limit: int = 20) -> list[tuple[str, str]]:
        async with self._tx("read") as cur:
            await cur.execute(
                "SELECT tenant, run_id FROM runs WHERE status = 'running'"
                f" AND (lease_expires_at IS NULL OR lease_expires_at <= {NOW}) AND takeovers < %s"
                " ORDER BY takeovers, updated_at LIMIT %s",
                (max_takeovers, limit),
            )
            rows = await cur.fetchall()
        return [(row[0], row[1]) for row in rows]

    async def _fence(self, cur: psycopg.AsyncCursor[Any], lease: Lease, added: int, next_seq: bool = False) -> int:
        bump = ", event_seq = event_seq + 1" if next_seq else ""
        await cur.execute(
            f"UPDATE runs SET updated_at = {NOW}, bytes = bytes + %s{bump}" + FENCE + " RETURNING event_seq",
            (added, *lease_fields(lease)),
        )
        row = await cur.fetchone()
        if row is None:
            await _fence_failure(cur, lease)
        return int(row[0])

    # -- quotas and retention --------------------------------------------------------------------

    async def usage(self, tenant: str) -> TenantUsage:
        async with self._tx("read") as cur:
            return await _usage(cur, tenant)

    async def purge(self, *, max_age_s: float, max_total_bytes: int) -> PurgeReport:
        async with self._tx("read") as cur:
            await cur.execute(f"SELECT run_id, bytes FROM runs WHERE {IDLE} AND updated_at < {NOW} - %s", (max_age_s,))
            old = await cur.fetchall()
            await cur.execute("SELECT COALESCE(SUM(bytes), 0) FROM runs")
            total = int((await _one(cur))[0])
            doomed, excess = runs_to_purge(old, total, max_total_bytes)
            if excess > 0:
                await cur.execute(f"SELECT run_id, bytes FROM runs WHERE {IDLE} ORDER BY updated_at")
                add_oldest(doomed, await cur.fetchall(), excess)
        ids = list(doomed)
        for start in range(0, len(ids), 400):
            async with self._tx() as cur:
                await cur.execute(
                    f"SELECT run_id FROM runs WHERE run_id = ANY(%s) AND {IDLE} FOR UPDATE", (ids[start : start + 400],)
                )
                kept = [row[0] for row in await cur.fetchall()]
                for table in RUN_TABLES:
                    await cur.execute(f"DELETE FROM {table} WHERE run_id = ANY(%s)", (kept,))
        async with self._tx() as cur:
            await cur.execute(f"DELETE FROM cache WHERE expires_at <= {NOW}")
            cache_deleted = cur.rowcount
            await cur.execute("SELECT COALESCE(SUM(bytes), 0) FROM runs")
            after = int((await _one(cur))[0])
        return PurgeReport(len(ids), total - after, cache_deleted, after)

    # -- tenant-scoped cache ---------------------------------------------------------------------

    async def cache_get(self, namespace: str, tenant: str, key: str) -> str | None:
        check_cache_entry(namespace, tenant, key)
        async with self._tx("read") as cur:
            await cur.execute(
                f"SELECT value FROM cache WHERE namespace = %s AND tenant = %s AND key = %s AND expires_at > {NOW}",
                (namespace, tenant, key),
            )
            row = await cur.fetchone()
        return None if row is None else str(row[0])

    async def cache_put(self, namespace: str, tenant: str, key: str, value: str, ttl_s: float) -> None:
        check_cache_entry(namespace, tenant, key, value, ttl_s)
        async with self._tx() as cur:
            await cur.execute(
                f"INSERT INTO cache (namespace, tenant, key, value, expires_at) VALUES (%s, %s, %s, %s, {NOW} + %s)"
                " ON CONFLICT (namespace, tenant, key) DO UPDATE SET value = excluded.value,"
                " expires_at = excluded.expires_at",
                (namespace, tenant, key, value, ttl_s),
            )

    # -- feed ------------------------------------------------------------------------------------

    async def _watch_state(self, run_ids: list[str]) -> dict[str, WatchState]:
        async with self._tx("read") as cur:
            await cur.execute(
                f"SELECT run_id, event_seq, status, COALESCE(lease_expires_at > {NOW}, false) FROM runs"
                " WHERE run_id = ANY(%s)",
                (run_ids,),
            )
            rows = await cur.fetchall()
        return {row[0]: WatchState(int(row[1]), bool(row[3]), row[2]) for row in rows}

    def _listener(self) -> Listener:
        return self._db.listen


async def _one(cur: psycopg.AsyncCursor[Any]) -> Any:
    row = await cur.fetchone()
    if row is None:  # a RETURNING / aggregate that must give a row
        raise RunStoreError("the run store returned no row")
    return row


async def _require_run(cur: psycopg.AsyncCursor[Any], tenant: str, run_id: str) -> None:
    await cur.execute("SELECT 1 FROM runs WHERE run_id = %s AND tenant = %s", (run_id, tenant))
    if await cur.fetchone() is None:
        raise RunNotFound(f"run {run_id!r} not found")


async def _fence_failure(cur: psycopg.AsyncCursor[Any], lease: Lease) -> NoReturn:
    await _require_run(cur, lease.tenant, lease.run_id)
    raise LeaseLost(f"run {lease.run_id!r} is driven by another replica now; this driver stops")


async def _usage(cur: psycopg.AsyncCursor[Any], tenant: str) -> TenantUsage:
    await cur.execute(
        "SELECT COUNT(*), COALESCE(SUM(bytes), 0), COALESCE(SUM(CASE WHEN status = 'running'"
        f" AND lease_expires_at > {NOW} THEN 1 ELSE 0 END), 0) FROM runs WHERE tenant = %s",
        (tenant,),
    )
    row = await _one(cur)
    return TenantUsage(active_runs=int(row[2]), stored_runs=int(row[0]), stored_bytes=int(row[1]))

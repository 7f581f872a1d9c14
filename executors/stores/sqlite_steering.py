"""What the SQLite store adds for people in the loop: reopening paused or escalated runs, closing
escalations, the paused runs of every tenant, webhook deliveries (see `RunStore`)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from contract.plan import Plan
from executors.stores.records import Lease, ReopenFrom, RunRecord, WebhookDelivery, dumps
from executors.stores.sql import (
    DELIVERY_COLUMNS,
    REOPEN_CONDITIONS,
    SELECT_RUN,
    delivery_from_row,
    run_from_row,
    run_update,
)
from executors.stores.sqlite_file import require_run

T = TypeVar("T")


class SqliteSteering:
    """Mixin of `SqliteRunStore`: the store's thread, transactions and clock come from it."""

    _clock: Callable[[], float]

    async def _call(self, fn: Callable[[], T]) -> T:
        raise NotImplementedError

    def _tx(self) -> contextlib.AbstractContextManager[sqlite3.Cursor]:
        raise NotImplementedError

    def _read(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    async def awaiting_runs(self, *, limit: int = 100) -> list[RunRecord]:
        def go() -> list[RunRecord]:
            with self._read() as conn:
                rows = conn.execute(
                    SELECT_RUN + " WHERE status = 'awaiting_approval' ORDER BY updated_at LIMIT ?", (limit,)
                ).fetchall()
            now = self._clock()
            return [run_from_row(row, now) for row in rows]

        return await self._call(go)

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
            "?", status="running", plan=plan, round_=round_, replans=replans, error=None, approval=approval,
            escalation=escalation, budget_round=budget_round,
        )  # fmt: skip

        def go() -> Lease | None:
            now = self._clock()
            with self._tx() as cur:
                require_run(cur, tenant, run_id)
                row = cur.execute(
                    f"UPDATE runs SET {', '.join(update.assignments)}, error_json = NULL, lease_owner = ?,"
                    " lease_epoch = lease_epoch + 1, lease_expires_at = ?, updated_at = ?, bytes = bytes + ?"
                    f" WHERE run_id = ? AND tenant = ? AND {REOPEN_CONDITIONS[expect]} RETURNING lease_epoch",
                    (*update.values, owner, now + ttl_s, now, update.added_bytes, run_id, tenant),
                ).fetchone()
                if row is None:
                    return None
                if update.plan_json is not None and round_ is not None:
                    cur.execute(
                        "INSERT OR IGNORE INTO run_plans (run_id, round, plan_json, created_at) VALUES (?, ?, ?, ?)",
                        (run_id, round_, update.plan_json, now),
                    )
            return Lease(tenant, run_id, owner, int(row[0]), now + ttl_s)

        return await self._call(go)

    async def close_escalation(self, tenant: str, run_id: str, escalation: dict[str, Any]) -> bool:
        def go() -> bool:
            with self._tx() as cur:
                require_run(cur, tenant, run_id)
                cur.execute(
                    "UPDATE runs SET escalation = ?, escalation_json = ?, updated_at = ?"
                    " WHERE run_id = ? AND tenant = ? AND " + REOPEN_CONDITIONS["escalated"],
                    (str(escalation.get("state", "closed")), dumps(escalation), self._clock(), run_id, tenant),
                )
                return cur.rowcount == 1

        return await self._call(go)

    async def save_delivery(self, tenant: str, run_id: str, delivery: WebhookDelivery) -> None:
        def go() -> None:
            with self._tx() as cur:
                require_run(cur, tenant, run_id)
                cur.execute(
                    f"INSERT INTO webhook_deliveries (run_id, {DELIVERY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (run_id, seq) DO UPDATE SET state = excluded.state, attempts = excluded.attempts,"
                    " status_code = excluded.status_code, error = excluded.error, updated_at = excluded.updated_at",
                    (run_id, delivery.seq, delivery.event, delivery.state, delivery.attempts, delivery.status_code,
                     delivery.error, delivery.updated_at),
                )  # fmt: skip

        await self._call(go)

    async def deliveries(self, tenant: str, run_id: str) -> list[WebhookDelivery]:
        def go() -> list[WebhookDelivery]:
            with self._read() as conn:
                require_run(conn, tenant, run_id)
                rows = conn.execute(
                    f"SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE run_id = ? ORDER BY seq", (run_id,)
                ).fetchall()
            return [delivery_from_row(row) for row in rows]

        return await self._call(go)

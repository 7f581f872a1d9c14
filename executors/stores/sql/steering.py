"""`RunSteering` and `WebhookDeliveries` in SQL: paused and escalated runs, webhook delivery state."""

from __future__ import annotations

import dataclasses
from typing import Any

from executors.stores.records import Lease, ReopenFrom, RunRecord, RunUpdate, TenantQuota, WebhookDelivery, dumps
from executors.stores.sql.dialect import Program, Statement
from executors.stores.sql.leases import require_run, within_active_cap
from executors.stores.sql.part import SqlPart
from executors.stores.sql.rows import DELIVERY_COLUMNS, SELECT_RUN, delivery_from_row, run_from_row
from executors.stores.sql.runs import save_plan, set_clause

REOPEN_CONDITIONS: dict[ReopenFrom, str] = {
    "awaiting_approval": "status = 'awaiting_approval'",
    "escalated": "status = 'failed' AND escalation = 'open'",
    "requires_action": "status = 'requires_action'",
}
"""The state `reopen` moves a run out of (back to `running`, under a new lease)."""


def reopen_program(
    tenant: str,
    run_id: str,
    owner: str,
    ttl_s: float,
    expect: ReopenFrom,
    update: RunUpdate,
    quota: TenantQuota | None = None,
) -> Program[Lease | None]:
    update = dataclasses.replace(update, status="running", error=None)
    clause = set_clause(update)
    yield from require_run(tenant, run_id)
    if quota is not None:
        state = yield Statement(
            f"SELECT 1 FROM runs WHERE run_id = :run_id AND tenant = :tenant AND {REOPEN_CONDITIONS[expect]}",
            {"run_id": run_id, "tenant": tenant},
        )
        if state.first() is None:
            return None  # not (any more) in that state: no cap to check
        yield from within_active_cap(tenant, quota)
    row = (
        yield Statement(
            "UPDATE runs SET error_json = NULL, lease_owner = :owner, lease_epoch = lease_epoch + 1,"
            f" lease_expires_at = :now + :ttl_s, updated_at = :now, bytes = bytes + :added{clause.sql}"
            f" WHERE run_id = :run_id AND tenant = :tenant AND {REOPEN_CONDITIONS[expect]}"
            " RETURNING lease_epoch, lease_expires_at",
            {
                "run_id": run_id,
                "tenant": tenant,
                "owner": owner,
                "ttl_s": ttl_s,
                "added": clause.added_bytes,
                **clause.params,
            },
        )
    ).first()
    if row is None:
        return None  # not (any more) in that state: someone else was first
    yield from save_plan(run_id, update, clause.plan_json)
    return Lease(tenant, run_id, owner, int(row[0]), float(row[1]))


def _close_escalation(tenant: str, run_id: str, escalation: dict[str, Any]) -> Program[bool]:
    yield from require_run(tenant, run_id)
    rows = yield Statement(
        "UPDATE runs SET escalation = :state, escalation_json = :escalation_json, updated_at = :now"
        f" WHERE run_id = :run_id AND tenant = :tenant AND {REOPEN_CONDITIONS['escalated']}",
        {
            "run_id": run_id,
            "tenant": tenant,
            "state": str(escalation.get("state", "closed")),
            "escalation_json": dumps(escalation),
        },
    )
    return rows.rowcount == 1


def _awaiting(limit: int) -> Program[list[RunRecord]]:
    rows = yield Statement(
        SELECT_RUN + " WHERE status = 'awaiting_approval' ORDER BY updated_at LIMIT :limit", {"limit": limit}
    )
    return [run_from_row(row) for row in rows.rows]


def _save_delivery(tenant: str, run_id: str, delivery: WebhookDelivery) -> Program[None]:
    yield from require_run(tenant, run_id)
    yield Statement(
        f"INSERT INTO webhook_deliveries (run_id, {DELIVERY_COLUMNS}) VALUES (:run_id, :seq, :event, :state,"
        " :attempts, :status_code, :error, :updated_at) ON CONFLICT (run_id, seq) DO UPDATE SET state = excluded.state,"
        " attempts = excluded.attempts, status_code = excluded.status_code, error = excluded.error,"
        " updated_at = excluded.updated_at",
        {"run_id": run_id, **delivery.model_dump()},
    )


def _deliveries(tenant: str, run_id: str) -> Program[list[WebhookDelivery]]:
    yield from require_run(tenant, run_id)
    rows = yield Statement(
        f"SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE run_id = :run_id ORDER BY seq", {"run_id": run_id}
    )
    return [delivery_from_row(row) for row in rows.rows]


class SqlSteering(SqlPart):
    async def reopen(
        self,
        tenant: str,
        run_id: str,
        *,
        owner: str,
        ttl_s: float,
        expect: ReopenFrom,
        update: RunUpdate,
        quota: TenantQuota | None = None,
    ) -> Lease | None:
        return await self.db.write(reopen_program(tenant, run_id, owner, ttl_s, expect, update, quota))

    async def close_escalation(self, tenant: str, run_id: str, escalation: dict[str, Any]) -> bool:
        return await self.db.write(_close_escalation(tenant, run_id, escalation))

    async def awaiting_runs(self, *, limit: int = 100) -> list[RunRecord]:
        return await self.db.read(_awaiting(limit))


class SqlDeliveries(SqlPart):
    async def save_delivery(self, tenant: str, run_id: str, delivery: WebhookDelivery) -> None:
        await self.db.write(_save_delivery(tenant, run_id, delivery))

    async def deliveries(self, tenant: str, run_id: str) -> list[WebhookDelivery]:
        return await self.db.read(_deliveries(tenant, run_id))

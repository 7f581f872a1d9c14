"""What the SQL backends share: the tables, the run row layout, lease and quota checks, sizes.

Both backends keep JSON as text (the same bytes on SQLite and PostgreSQL) and times as Unix
seconds. `runs.bytes` is the run's stored size (plans, request, results, events), kept up to date by
every write, so per-tenant and total sizes are one SUM.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from contract.plan import Plan
from executors.stores.errors import QuotaExceeded, RunBusy, StoredBytesQuota, StoredRunsQuota, TooManyActiveRuns
from executors.stores.records import (
    Lease,
    RunEvent,
    RunRecord,
    RunStatus,
    TenantQuota,
    TenantUsage,
    WebhookDelivery,
    dumps,
)

EVENT_OVERHEAD_BYTES = 64  # seq, type, round, node id, timestamp of one event row

_TABLES = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    request TEXT NOT NULL,
    plan_json TEXT NOT NULL,
    status TEXT NOT NULL,
    round INTEGER NOT NULL DEFAULT 0,
    replans INTEGER NOT NULL DEFAULT 0,
    error_json TEXT,
    created_at {real} NOT NULL,
    updated_at {real} NOT NULL,
    lease_owner TEXT,
    lease_epoch INTEGER NOT NULL DEFAULT 0,
    lease_expires_at {real},
    takeovers INTEGER NOT NULL DEFAULT 0,
    event_seq INTEGER NOT NULL DEFAULT 0,
    bytes BIGINT NOT NULL DEFAULT 0,
    approval_json TEXT,
    escalation TEXT,
    escalation_json TEXT,
    webhook_url TEXT,
    budget_round INTEGER NOT NULL DEFAULT 0,
    planner_json TEXT
);
CREATE TABLE IF NOT EXISTS run_plans (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    round INTEGER NOT NULL,
    plan_json TEXT NOT NULL,
    created_at {real} NOT NULL,
    PRIMARY KEY (run_id, round)
);
CREATE TABLE IF NOT EXISTS node_results (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    round INTEGER NOT NULL,
    node_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    input_hash TEXT,
    output_sha256 TEXT,
    output_json TEXT,
    result_json TEXT NOT NULL,
    committed_at {real} NOT NULL,
    PRIMARY KEY (run_id, round, node_id)
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    round INTEGER NOT NULL,
    node_id TEXT,
    data_json TEXT NOT NULL,
    ts {real} NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    status_code INTEGER,
    error TEXT,
    updated_at {real} NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS cache (
    namespace TEXT NOT NULL,
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    expires_at {real} NOT NULL,
    PRIMARY KEY (namespace, tenant, key)
);
"""
_INDEXES = """
CREATE INDEX IF NOT EXISTS runs_by_tenant ON runs (tenant, created_at);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, updated_at);
CREATE INDEX IF NOT EXISTS runs_by_escalation ON runs (tenant, escalation);
CREATE INDEX IF NOT EXISTS cache_by_expiry ON cache (expires_at);
"""
ADDED_COLUMNS: dict[str, str] = {
    "approval_json": "TEXT",
    "escalation": "TEXT",
    "escalation_json": "TEXT",
    "webhook_url": "TEXT",
    "budget_round": "INTEGER NOT NULL DEFAULT 0",
    "planner_json": "TEXT",
}
"""Columns of `runs` newer than its first layout: added to an older store when it is opened."""
SCHEMA_SQLITE = _TABLES.format(real="REAL") + "-- after migration" + _INDEXES
SCHEMA_POSTGRES = (
    _TABLES.format(real="DOUBLE PRECISION")
    + "".join(f"ALTER TABLE runs ADD COLUMN IF NOT EXISTS {name} {kind};\n" for name, kind in ADDED_COLUMNS.items())
    + _INDEXES
)
RUN_TABLES = ("webhook_deliveries", "events", "node_results", "run_plans", "runs")
"""Every table holding rows of a run, dependants first (the order a run is deleted in)."""

RUN_COLUMNS = (
    "run_id, tenant, request, plan_json, status, round, replans, error_json, created_at, updated_at,"
    " lease_owner, lease_expires_at, approval_json, escalation_json, webhook_url, budget_round, planner_json"
)
SELECT_RUN = f"SELECT {RUN_COLUMNS} FROM runs"


def run_from_row(row: Any, now: float) -> RunRecord:
    """A `SELECT_RUN` row as a record; `now` (the store's clock) decides whether the lease is live."""
    expires = row[11]
    return RunRecord(
        run_id=row[0],
        tenant=row[1],
        request=row[2],
        plan=Plan.model_validate_json(row[3]),
        status=row[4],
        round=row[5],
        replans=row[6],
        error=None if row[7] is None else json.loads(row[7]),
        created_at=row[8],
        updated_at=row[9],
        lease_owner=row[10],
        lease_expires_at=expires,
        driven=expires is not None and expires > now,
        approval=_loads(row[12]),
        escalation=_loads(row[13]),
        webhook_url=row[14],
        budget_round=row[15],
        planner=_loads(row[16]),
    )


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


EVENT_COLUMNS = "run_id, seq, type, round, node_id, data_json, ts"


def event_from_row(row: Any) -> RunEvent:
    """An `EVENT_COLUMNS` row as an event."""
    return RunEvent(
        run_id=row[0], seq=row[1], type=row[2], round=row[3], node_id=row[4], data=json.loads(row[5]), ts=row[6]
    )


@dataclass(frozen=True)
class RunUpdate:
    """The SET part of `update_run` in a backend's placeholder style, and what it adds to `runs.bytes`."""

    assignments: list[str]
    values: list[Any]
    plan_json: str | None
    added_bytes: int


def run_update(
    mark: str,
    *,
    status: RunStatus | None,
    plan: Plan | None,
    round_: int | None,
    replans: int | None,
    error: dict[str, Any] | None,
    approval: dict[str, Any] | None = None,
    escalation: dict[str, Any] | None = None,
    budget_round: int | None = None,
) -> RunUpdate:
    """Only the fields given (not None) are set."""
    assignments: list[str] = []
    values: list[Any] = []
    plan_json = None if plan is None else plan.model_dump_json()
    texts = {"error_json": dumps(error), "approval_json": dumps(approval), "escalation_json": dumps(escalation)}
    for column, value in (
        ("status", status),
        ("round", round_),
        ("replans", replans),
        ("plan_json", plan_json),
        *texts.items(),
        ("escalation", None if escalation is None else str(escalation.get("state", "open"))),
        ("budget_round", budget_round),
    ):
        if value is not None:
            assignments.append(f"{column} = {mark}")
            values.append(value)
    added = 2 * text_bytes(plan_json) + sum(text_bytes(text) for text in texts.values())
    return RunUpdate(assignments, values, plan_json, added)


REOPEN_CONDITIONS = {
    "awaiting_approval": "status = 'awaiting_approval'",
    "escalated": "status = 'failed' AND escalation = 'open'",
}
"""The state `RunStore.reopen` moves a run out of (back to `running`, under a new lease)."""


def list_filter(
    mark: str, *, status: str | None, escalation: str | None, before: str | None, tenant: str
) -> tuple[str, list[Any]]:
    """WHERE conditions (after `tenant = mark`) of `list_runs`, newest first paging on `before` (a run id).
    `interrupted` is a running run without a live lease: the caller adds that condition (its clock)."""
    conditions: list[str] = []
    values: list[Any] = []
    if status is not None:
        conditions.append(f"status = {mark}")
        values.append("running" if status == "interrupted" else status)
    if escalation is not None:
        conditions.append(f"escalation = {mark}")
        values.append(escalation)
    if before is not None:
        conditions.append(
            f"(created_at, run_id) < (SELECT created_at, run_id FROM runs WHERE run_id = {mark} AND tenant = {mark})"
        )
        values.extend([before, tenant])
    return "".join(" AND " + condition for condition in conditions), values


DELIVERY_COLUMNS = "seq, event, state, attempts, status_code, error, updated_at"


def delivery_from_row(row: Any) -> WebhookDelivery:
    return WebhookDelivery(
        seq=row[0], event=row[1], state=row[2], attempts=row[3], status_code=row[4], error=row[5], updated_at=row[6]
    )


def results_query(mark: str, run_id: str, round_: int | None) -> tuple[str, tuple[Any, ...]]:
    """Node results of a run (one round, or all), in commit order."""
    query = f"SELECT result_json FROM node_results WHERE run_id = {mark}"
    if round_ is None:
        return query + " ORDER BY round, committed_at, node_id", (run_id,)
    return query + f" AND round = {mark} ORDER BY round, committed_at, node_id", (run_id, round_)


def lease_fields(lease: Lease) -> tuple[str, str, str, int]:
    """Parameters of the fence `run_id, tenant, lease_owner, lease_epoch`, in that order."""
    return (lease.run_id, lease.tenant, lease.owner, lease.epoch)


def busy_error(run_id: str, holder: str | None, expires_in_s: float) -> RunBusy:
    return RunBusy(
        f"run {run_id!r} is being executed by a live driver (lease expires in {max(expires_in_s, 0):.1f} s "
        "unless renewed)",
        owner=holder,
        expires_in_s=expires_in_s,
    )


def quota_error(usage: TenantUsage, quota: TenantQuota) -> QuotaExceeded | None:
    """The first cap a new run would break, or None."""
    if usage.active_runs >= quota.max_active_runs:
        return TooManyActiveRuns(
            f"{usage.active_runs} runs of this tenant are executing; the limit is {quota.max_active_runs}",
            hint="wait for a run to finish",
        )
    if usage.stored_runs >= quota.max_stored_runs:
        return StoredRunsQuota(
            f"this tenant has {usage.stored_runs} stored runs; the limit is {quota.max_stored_runs}",
            hint="old runs are purged by retention; lower runs.retention_max_age_s or raise the cap",
        )
    if usage.stored_bytes >= quota.max_stored_bytes:
        return StoredBytesQuota(
            f"this tenant's runs take {usage.stored_bytes} bytes; the limit is {quota.max_stored_bytes}",
            hint="old runs are purged by retention; lower runs.retention_max_age_s or raise the cap",
        )
    return None


def text_bytes(text: str | None) -> int:
    return 0 if text is None else len(text.encode("utf-8"))


def result_bytes(result_json: str, output_json: str | None) -> int:
    return text_bytes(result_json) + text_bytes(output_json)


def runs_to_purge(old: Iterable[tuple[str, int]], total: int, max_total_bytes: int) -> tuple[dict[str, int], int]:
    """Runs past the age limit (id → bytes), and how many bytes must still go for the size limit."""
    doomed = {run_id: int(size) for run_id, size in old}
    return doomed, total - sum(doomed.values()) - max_total_bytes


def add_oldest(doomed: dict[str, int], idle_oldest_first: Iterable[tuple[str, int]], excess: int) -> None:
    """Add the oldest idle runs to `doomed` until `excess` bytes are covered."""
    for run_id, size in idle_oldest_first:
        if excess <= 0:
            return
        if run_id not in doomed:
            doomed[run_id] = int(size)
            excess -= int(size)

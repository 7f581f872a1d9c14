"""Rows of the run store as records, and the checks and sizes its programs share."""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable
from typing import Any

from contract.plan import Plan
from executors.stores.errors import RunBusy
from executors.stores.records import RunEvent, RunRecord, WebhookDelivery

EVENT_OVERHEAD_BYTES = 64  # seq, type, round, node id, timestamp of one event row
CHUNK = 400
"""Ids per `IN (...)` list, well under SQLite's variable limit."""

RUN_COLUMNS = (
    "run_id, tenant, request, plan_json, status, round, replans, error_json, created_at, updated_at,"
    " lease_owner, lease_expires_at, approval_json, escalation_json, webhook_url, budget_round, planner_json,"
    " tools_json, action_json"
)
SELECT_RUN = f"SELECT {RUN_COLUMNS}, :now FROM runs"
"""A run row, and the store's clock as its last column (it decides whether the lease is live)."""
LIVE = "lease_expires_at > :now"
IDLE = "(status <> 'running' OR lease_expires_at IS NULL OR lease_expires_at <= :now)"
"""A run nobody drives: finished, or its lease released or expired."""


def run_from_row(row: Any) -> RunRecord:
    """A `SELECT_RUN` row (or a RETURNING of the same columns) as a record."""
    expires, now = row[11], row[-1]
    return RunRecord(
        run_id=row[0],
        tenant=row[1],
        request=row[2],
        plan=Plan.model_validate_json(row[3]),
        status=row[4],
        round=row[5],
        replans=row[6],
        error=loads(row[7]),
        created_at=row[8],
        updated_at=row[9],
        lease_owner=row[10],
        lease_expires_at=expires,
        driven=expires is not None and expires > now,
        approval=loads(row[12]),
        escalation=loads(row[13]),
        webhook_url=row[14],
        budget_round=row[15],
        planner=loads(row[16]),
        tools=loads(row[17]),
        action=loads(row[18]),
    )


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


EVENT_COLUMNS = "run_id, seq, type, round, node_id, data_json, ts"


def event_from_row(row: Any) -> RunEvent:
    """An `EVENT_COLUMNS` row as an event."""
    return RunEvent(
        run_id=row[0], seq=row[1], type=row[2], round=row[3], node_id=row[4], data=json.loads(row[5]), ts=row[6]
    )


DELIVERY_COLUMNS = "seq, event, state, attempts, status_code, error, updated_at"


def delivery_from_row(row: Any) -> WebhookDelivery:
    return WebhookDelivery(
        seq=row[0], event=row[1], state=row[2], attempts=row[3], status_code=row[4], error=row[5], updated_at=row[6]
    )


def busy_error(run_id: str, holder: str | None, expires_in_s: float) -> RunBusy:
    return RunBusy(
        f"run {run_id!r} is being executed by a live driver (lease expires in {max(expires_in_s, 0):.1f} s "
        "unless renewed)",
        owner=holder,
        expires_in_s=expires_in_s,
    )


def text_bytes(text: str | None) -> int:
    return 0 if text is None else len(text.encode("utf-8"))


def result_bytes(result_json: str, output_json: str | None) -> int:
    return text_bytes(result_json) + text_bytes(output_json)


def runs_to_purge(old: Iterable[Any], total: int, max_total_bytes: int) -> tuple[dict[str, int], int]:
    """Runs past the age limit (id → bytes), and how many bytes must still go for the size limit."""
    doomed = {str(run_id): int(size) for run_id, size in old}
    return doomed, total - sum(doomed.values()) - max_total_bytes


def add_oldest(
    doomed: dict[str, int], idle_runs: Iterable[Any], cache_entries: Iterable[Any], excess: int
) -> float | None:
    """Add the oldest idle runs and cache entries to what goes until `excess` bytes are covered, the
    two taken together oldest first: runs (id, bytes, updated at) go into `doomed`; the entries'
    part is returned as a time (every entry stored up to then goes; None: none). Both lists come
    oldest first; the entries as (stored at, bytes)."""
    runs = ((float(at), int(size), str(run_id)) for run_id, size, at in idle_runs if str(run_id) not in doomed)
    entries = ((float(at), int(size), None) for at, size in cache_entries)
    cutoff: float | None = None
    for at, size, run_id in heapq.merge(runs, entries, key=lambda item: item[0]):
        if excess <= 0:
            break
        if run_id is None:
            cutoff = at
        else:
            doomed[run_id] = size
        excess -= size
    return cutoff

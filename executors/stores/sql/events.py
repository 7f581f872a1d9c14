"""`RunEvents` in SQL: each run's ordered event log, and the followers' watch query (written once)."""

from __future__ import annotations

from typing import Any

from executors.stores.feed import EventFeed, Subscription
from executors.stores.records import EventType, Lease, RunEvent, WatchState, dumps
from executors.stores.sql.dialect import Announce, Program, Statement, in_list
from executors.stores.sql.leases import fenced, require_run
from executors.stores.sql.part import SqlPart
from executors.stores.sql.rows import CHUNK, EVENT_COLUMNS, EVENT_OVERHEAD_BYTES, LIVE, event_from_row, text_bytes

INSERT_EVENT = (
    "INSERT INTO events (run_id, seq, type, round, node_id, data_json, ts)"
    " VALUES (:run_id, :seq, :type, :round, :node_id, :data, :ts)"
)


def _append(
    lease: Lease, type_: EventType, round_: int, node_id: str | None, data: dict[str, Any]
) -> Program[RunEvent]:
    data_json = dumps(data) or "{}"
    seq, now = yield from fenced(lease, text_bytes(data_json) + EVENT_OVERHEAD_BYTES, next_seq=True)
    params = {"run_id": lease.run_id, "seq": seq, "type": type_, "round": round_, "node_id": node_id}
    yield Statement(INSERT_EVENT, {**params, "data": data_json, "ts": now})
    yield Announce(lease.run_id, seq)
    return RunEvent(run_id=lease.run_id, seq=seq, type=type_, round=round_, node_id=node_id, data=data, ts=now)


def _events(tenant: str, run_id: str, after: int, limit: int) -> Program[list[RunEvent]]:
    yield from require_run(tenant, run_id)
    rows = yield Statement(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = :run_id AND seq > :after ORDER BY seq LIMIT :limit",
        {"run_id": run_id, "after": after, "limit": limit},
    )
    return [event_from_row(row) for row in rows.rows]


def _watch(run_ids: list[str]) -> Program[dict[str, WatchState]]:
    states: dict[str, WatchState] = {}
    for start in range(0, len(run_ids), CHUNK):
        marks, params = in_list("id", run_ids[start : start + CHUNK])
        rows = yield Statement(
            f"SELECT run_id, event_seq, status, COALESCE({LIVE}, FALSE) FROM runs WHERE run_id IN {marks}", params
        )
        for run_id, seq, status, live in rows.rows:
            states[str(run_id)] = WatchState(int(seq), bool(live), str(status))
    return states


class SqlEvents(SqlPart):
    feed: EventFeed

    async def append_event(
        self,
        lease: Lease,
        type_: EventType,
        *,
        round_: int = 0,
        node_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> RunEvent:
        event = await self.db.write(_append(lease, type_, round_, node_id, data or {}))
        self.feed.publish(lease.run_id, event.seq)
        return event

    async def events(self, tenant: str, run_id: str, *, after: int = 0, limit: int = 1000) -> list[RunEvent]:
        return await self.db.read(_events(tenant, run_id, after, limit))

    def subscribe(self, run_id: str) -> Subscription:
        return self.feed.subscribe(run_id)

    async def _watch_state(self, run_ids: list[str]) -> dict[str, WatchState]:
        """One read of the state of all followed runs (the feed's watch tick)."""
        return await self.db.read(_watch(run_ids))

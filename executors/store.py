"""Durable run store: runs, their plans, node results and an ordered event log per run.

`RunStore` is the interface (a Redis or PostgreSQL store can implement it later); `SqliteRunStore`
is the default: one SQLite file in WAL mode, one connection guarded by a lock, short transactions
(each call is one transaction). Every call is tenant-scoped: a run of tenant A does not exist for
tenant B (`get_run` returns None, writes raise `RunNotFound`).

Node results are idempotent on (run id, round, node id): the first committed result wins and a
second save returns it unchanged. The round (0 for the first plan, +1 per re-plan) is part of the
key because a re-plan may reuse node ids.

A failing database (disk full, read-only file or folder, I/O error) raises `RunStoreError`
(retryable), never a raw sqlite3 error; a failed write leaves nothing half-written (one transaction).
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from executors.errors import ExecutorError, RunNotFound
from executors.observation import NodeResult
from planner.plan import Plan

logger = logging.getLogger("planstack.executors.store")


class RunStoreError(ExecutorError):
    """The run store cannot be read or written (disk full, read-only, I/O error). Nothing of the
    failed call was committed; the run stays resumable once the store works again."""

    type = "store_unavailable"
    retryable = True


RunStatus = Literal["running", "succeeded", "failed", "interrupted"]
EventType = Literal[
    "run_started",
    "node_started",
    "node_retrying",
    "node_finished",
    "node_failed",
    "node_skipped",
    "replan",
    "run_finished",
]
TERMINAL_STATUSES: frozenset[str] = frozenset({"succeeded", "failed"})


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    tenant: str
    request: str
    plan: Plan = Field(description="The plan of the current round.")
    status: RunStatus = "running"
    round: int = 0
    replans: int = 0
    error: dict[str, Any] | None = Field(default=None, description="Structured explanation when the run failed.")
    created_at: float = 0.0
    updated_at: float = 0.0


class RunEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    seq: int
    type: EventType
    round: int = 0
    node_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    ts: float = 0.0


class RunStore(Protocol):
    def create_run(self, record: RunRecord) -> RunRecord: ...

    def get_run(self, tenant: str, run_id: str) -> RunRecord | None: ...

    def list_runs(self, tenant: str, *, limit: int = 50) -> list[RunRecord]: ...

    def update_run(
        self,
        tenant: str,
        run_id: str,
        *,
        status: RunStatus | None = None,
        plan: Plan | None = None,
        round_: int | None = None,
        replans: int | None = None,
        error: dict[str, Any] | None = None,
    ) -> RunRecord: ...

    def save_result(self, tenant: str, run_id: str, result: NodeResult) -> NodeResult: ...

    def results(self, tenant: str, run_id: str, *, round_: int | None = None) -> list[NodeResult]: ...

    def plans(self, tenant: str, run_id: str) -> list[tuple[int, Plan]]: ...

    def append_event(
        self,
        tenant: str,
        run_id: str,
        type_: EventType,
        *,
        round_: int = 0,
        node_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> RunEvent: ...

    def events(self, tenant: str, run_id: str, *, after: int = 0) -> list[RunEvent]: ...

    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    request TEXT NOT NULL,
    plan_json TEXT NOT NULL,
    status TEXT NOT NULL,
    round INTEGER NOT NULL DEFAULT 0,
    replans INTEGER NOT NULL DEFAULT 0,
    error_json TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_tenant ON runs (tenant, created_at);
CREATE TABLE IF NOT EXISTS run_plans (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    round INTEGER NOT NULL,
    plan_json TEXT NOT NULL,
    created_at REAL NOT NULL,
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
    committed_at REAL NOT NULL,
    PRIMARY KEY (run_id, round, node_id)
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    round INTEGER NOT NULL,
    node_id TEXT,
    data_json TEXT NOT NULL,
    ts REAL NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""


class SqliteRunStore:
    """`RunStore` on one SQLite file (WAL). Safe to share between threads of one process, and
    between processes on one machine (SQLite file locking, `busy_timeout`)."""

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = str(path)
        self._clock = clock
        self._lock = threading.Lock()
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                Path(self.path).touch(mode=0o600, exist_ok=True)  # private from the start; -wal/-shm get its mode
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10.0)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across a process crash
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA busy_timeout=10000")
            with self._lock:
                self._conn.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise RunStoreError(
                f"cannot open the run store {self.path}: {exc}", hint="check free disk space and write permission"
            ) from exc

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Cursor]:
        with self._lock, _translate_errors(self.path, "write"):
            cur = self._conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")
                try:
                    yield cur
                    cur.execute("COMMIT")
                except BaseException:
                    # SQLite may have rolled back already (e.g. SQLITE_FULL): a second ROLLBACK
                    # would fail and hide the real error.
                    if self._conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            self._conn.execute("ROLLBACK")
                    raise
            finally:
                cur.close()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, _translate_errors(self.path, "read"):
            yield self._conn

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._conn.close()

    def __enter__(self) -> SqliteRunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs ------------------------------------------------------------------------------------

    def create_run(self, record: RunRecord) -> RunRecord:
        now = self._clock()
        record = record.model_copy(update={"created_at": now, "updated_at": now})
        plan_json = record.plan.model_dump_json()
        with self._tx() as cur:
            cur.execute(
                "INSERT INTO runs (run_id, tenant, request, plan_json, status, round, replans, error_json,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.run_id,
                    record.tenant,
                    record.request,
                    plan_json,
                    record.status,
                    record.round,
                    record.replans,
                    _dumps(record.error),
                    now,
                    now,
                ),
            )
            cur.execute(
                "INSERT INTO run_plans (run_id, round, plan_json, created_at) VALUES (?, ?, ?, ?)",
                (record.run_id, record.round, plan_json, now),
            )
        return record

    def get_run(self, tenant: str, run_id: str) -> RunRecord | None:
        with self._read():
            row = self._conn.execute(_SELECT_RUN + " WHERE run_id = ? AND tenant = ?", (run_id, tenant)).fetchone()
        return None if row is None else _run_from_row(row)

    def list_runs(self, tenant: str, *, limit: int = 50) -> list[RunRecord]:
        with self._read():
            rows = self._conn.execute(
                _SELECT_RUN + " WHERE tenant = ? ORDER BY created_at DESC LIMIT ?", (tenant, limit)
            ).fetchall()
        return [_run_from_row(row) for row in rows]

    def update_run(
        self,
        tenant: str,
        run_id: str,
        *,
        status: RunStatus | None = None,
        plan: Plan | None = None,
        round_: int | None = None,
        replans: int | None = None,
        error: dict[str, Any] | None = None,
    ) -> RunRecord:
        now = self._clock()
        with self._tx() as cur:
            _require_run(cur, tenant, run_id)
            sets: list[str] = ["updated_at = ?"]
            values: list[Any] = [now]
            for column, value in (("status", status), ("round", round_), ("replans", replans)):
                if value is not None:
                    sets.append(f"{column} = ?")
                    values.append(value)
            if plan is not None:
                sets.append("plan_json = ?")
                values.append(plan.model_dump_json())
            if error is not None:
                sets.append("error_json = ?")
                values.append(_dumps(error))
            cur.execute(f"UPDATE runs SET {', '.join(sets)} WHERE run_id = ?", (*values, run_id))  # noqa: S608
            if plan is not None and round_ is not None:
                cur.execute(
                    "INSERT OR IGNORE INTO run_plans (run_id, round, plan_json, created_at) VALUES (?, ?, ?, ?)",
                    (run_id, round_, plan.model_dump_json(), now),
                )
            row = cur.execute(_SELECT_RUN + " WHERE run_id = ?", (run_id,)).fetchone()
        return _run_from_row(row)

    def plans(self, tenant: str, run_id: str) -> list[tuple[int, Plan]]:
        with self._read():
            _require_run(self._conn, tenant, run_id)
            rows = self._conn.execute(
                "SELECT round, plan_json FROM run_plans WHERE run_id = ? ORDER BY round", (run_id,)
            ).fetchall()
        return [(row[0], Plan.model_validate_json(row[1])) for row in rows]

    # -- node results ----------------------------------------------------------------------------

    def save_result(self, tenant: str, run_id: str, result: NodeResult) -> NodeResult:
        with self._tx() as cur:
            _require_run(cur, tenant, run_id)
            cur.execute(
                "INSERT INTO node_results (run_id, round, node_id, tool, status, attempts, input_hash,"
                " output_sha256, output_json, result_json, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (run_id, round, node_id) DO NOTHING",
                (
                    run_id,
                    result.round,
                    result.node_id,
                    result.tool,
                    result.status,
                    result.attempts,
                    result.input_hash,
                    result.output_sha256,
                    _dumps(result.output),
                    result.model_dump_json(),
                    self._clock(),
                ),
            )
            if cur.rowcount == 1:
                return result
            row = cur.execute(
                "SELECT result_json FROM node_results WHERE run_id = ? AND round = ? AND node_id = ?",
                (run_id, result.round, result.node_id),
            ).fetchone()
        return NodeResult.model_validate_json(row[0])

    def results(self, tenant: str, run_id: str, *, round_: int | None = None) -> list[NodeResult]:
        query = "SELECT result_json FROM node_results WHERE run_id = ?"
        params: tuple[Any, ...] = (run_id,)
        if round_ is not None:
            query += " AND round = ?"
            params = (run_id, round_)
        with self._read():
            _require_run(self._conn, tenant, run_id)
            rows = self._conn.execute(query + " ORDER BY round, committed_at, node_id", params).fetchall()
        return [NodeResult.model_validate_json(row[0]) for row in rows]

    # -- events ----------------------------------------------------------------------------------

    def append_event(
        self,
        tenant: str,
        run_id: str,
        type_: EventType,
        *,
        round_: int = 0,
        node_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> RunEvent:
        event_data = data or {}
        now = self._clock()
        with self._tx() as cur:
            _require_run(cur, tenant, run_id)
            seq = cur.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run_id = ?", (run_id,)).fetchone()[0]
            cur.execute(
                "INSERT INTO events (run_id, seq, type, round, node_id, data_json, ts) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, seq, type_, round_, node_id, _dumps(event_data), now),
            )
        return RunEvent(run_id=run_id, seq=seq, type=type_, round=round_, node_id=node_id, data=event_data, ts=now)

    def events(self, tenant: str, run_id: str, *, after: int = 0) -> list[RunEvent]:
        with self._read():
            _require_run(self._conn, tenant, run_id)
            rows = self._conn.execute(
                "SELECT run_id, seq, type, round, node_id, data_json, ts FROM events"
                " WHERE run_id = ? AND seq > ? ORDER BY seq",
                (run_id, after),
            ).fetchall()
        return [
            RunEvent(run_id=r[0], seq=r[1], type=r[2], round=r[3], node_id=r[4], data=json.loads(r[5]), ts=r[6])
            for r in rows
        ]


_SELECT_RUN = (
    "SELECT run_id, tenant, request, plan_json, status, round, replans, error_json, created_at, updated_at FROM runs"
)


def _run_from_row(row: Any) -> RunRecord:
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
    )


def _require_run(cur: sqlite3.Cursor | sqlite3.Connection, tenant: str, run_id: str) -> None:
    row = cur.execute("SELECT 1 FROM runs WHERE run_id = ? AND tenant = ?", (run_id, tenant)).fetchone()
    if row is None:
        raise RunNotFound(f"run {run_id!r} not found")


@contextmanager
def _translate_errors(path: str, what: str) -> Iterator[None]:
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        logger.error("run store %s: %s failed: %s", path, what, exc)
        raise RunStoreError(
            f"the run store cannot {what}: {exc}", hint="check free disk space and write permission"
        ) from exc


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))

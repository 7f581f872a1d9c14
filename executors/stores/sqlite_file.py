"""`SqliteFile`: one SQLite database file on its own thread, for `SqliteRunStore`.

The file is created 0600 (its folder 0700 when new; SQLite gives the -wal/-shm files the same mode,
and an existing wider file is tightened), opened in WAL mode with `synchronous=NORMAL` (durable
across a process crash) and a `busy_timeout` (several processes may share it), its tables created or
migrated. Every call runs on the one worker thread that owns the connection, never on the event
loop; `tx()` is one `BEGIN IMMEDIATE` transaction, and SQLite's errors leave as `RunStoreError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from executors.errors import RunNotFound
from executors.stores.errors import RunStoreError
from executors.stores.sql import ADDED_COLUMNS, SCHEMA_SQLITE

logger = logging.getLogger("planstack.executors.stores.sqlite")
T = TypeVar("T")
_LEASE_COLUMNS = {
    "lease_owner": "TEXT",
    "lease_epoch": "INTEGER NOT NULL DEFAULT 0",
    "lease_expires_at": "REAL",
    "takeovers": "INTEGER NOT NULL DEFAULT 0",
    "event_seq": "INTEGER NOT NULL DEFAULT 0",
    "bytes": "INTEGER NOT NULL DEFAULT 0",
    **ADDED_COLUMNS,
}


class SqliteFile:
    def __init__(self, path: str) -> None:
        self.path = path
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="planstack-sqlite")
        self.conn: sqlite3.Connection = self._worker.submit(self._open).result()

    def _open(self) -> sqlite3.Connection:  # on the worker thread
        try:
            if self.path != ":memory:":
                _create_private(Path(self.path))
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across a process crash
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=10000")
            tables, indexes = SCHEMA_SQLITE.split("-- after migration", 1)
            conn.executescript(tables)
            _migrate(conn)
            conn.executescript(indexes)
            if self.path != ":memory:":
                _tighten(Path(self.path))
            return conn
        except (sqlite3.Error, OSError) as exc:
            raise RunStoreError(
                f"cannot open the run store {self.path}: {exc}", hint="check free disk space and write permission"
            ) from exc

    async def call(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._worker, fn)

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Cursor]:
        with _translate_errors(self.path, "write"):
            cur = self.conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")
                try:
                    yield cur
                    cur.execute("COMMIT")
                except BaseException:
                    # SQLite may have rolled back already (e.g. SQLITE_FULL): a second ROLLBACK
                    # would fail and hide the real error.
                    if self.conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            self.conn.execute("ROLLBACK")
                    raise
            finally:
                cur.close()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        with _translate_errors(self.path, "read"):
            yield self.conn

    async def aclose(self) -> None:
        await self.call(self._close_now)
        self._worker.shutdown(wait=True)

    def _close_now(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    def close(self) -> None:
        """Synchronous close, for code outside an event loop."""
        self._worker.submit(self._close_now).result()
        self._worker.shutdown(wait=True)


def require_run(conn: sqlite3.Cursor | sqlite3.Connection, tenant: str, run_id: str) -> None:
    row = conn.execute("SELECT 1 FROM runs WHERE run_id = ? AND tenant = ?", (run_id, tenant)).fetchone()
    if row is None:
        raise RunNotFound(f"run {run_id!r} not found")


def _migrate(conn: sqlite3.Connection) -> None:
    """Add the lease, accounting and steering columns to a store written before they existed."""
    present = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    if all(column in present for column in _LEASE_COLUMNS):
        return
    conn.execute("BEGIN IMMEDIATE")  # then look again: another process may have migrated meanwhile
    present = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    missing = [column for column in _LEASE_COLUMNS if column not in present]
    for column in missing:  # column names and types come from _LEASE_COLUMNS, never from input
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column} {_LEASE_COLUMNS[column]}")
    if "event_seq" in missing:
        conn.execute(
            "UPDATE runs SET event_seq = (SELECT COALESCE(MAX(seq), 0) FROM events WHERE events.run_id = runs.run_id)"
        )
    if "bytes" in missing:
        conn.execute(
            "UPDATE runs SET bytes = LENGTH(plan_json) * 2 + LENGTH(request)"
            " + (SELECT COALESCE(SUM(LENGTH(result_json) + COALESCE(LENGTH(output_json), 0)), 0)"
            " FROM node_results WHERE node_results.run_id = runs.run_id)"
            " + (SELECT COALESCE(SUM(LENGTH(data_json) + 64), 0) FROM events WHERE events.run_id = runs.run_id)"
        )
    conn.execute("COMMIT")
    if missing:
        logger.info("run store migrated: added %s", ", ".join(missing))


def _create_private(path: Path) -> None:
    """Create the database file 0600 (its folder 0700 when new) before SQLite opens it."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)


def _tighten(path: Path) -> None:
    """SQLite gives -wal/-shm the database's mode; an existing file with wider bits is tightened."""
    for candidate in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            if candidate.stat().st_mode & 0o077:
                os.chmod(candidate, 0o600)


@contextmanager
def _translate_errors(path: str, what: str) -> Iterator[None]:
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        logger.error("run store %s: %s failed: %s", path, what, exc)
        raise RunStoreError(
            f"the run store cannot {what}: {exc}", hint="check free disk space and write permission"
        ) from exc

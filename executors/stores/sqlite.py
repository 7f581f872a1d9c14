"""SQLite, the embedded default: one file in WAL mode, every call on the store's own thread.

`SqliteDialect` opens the file 0600 (its folder 0700 when new; SQLite gives the -wal/-shm files the
same mode, and an existing wider file is tightened) in WAL mode with `synchronous=NORMAL` (durable
across a process crash) and a `busy_timeout` (several processes on one machine may share it), and
brings its tables up to date. A program runs whole on the one worker thread that owns the
connection, never on the event loop: one hop per store call, a write being one `BEGIN IMMEDIATE`
transaction. The clock is this process's (`:now` is a parameter). Leases are rows like any other;
a follower in another process notices new events at the feed's watch tick. SQLite's errors leave as
`RunStoreError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from executors.stores.base import register_backend
from executors.stores.config import RunsConfig
from executors.stores.errors import RunStoreError
from executors.stores.sql.dialect import (
    NO_ROWS,
    Catalog,
    Program,
    Rows,
    SqlDialect,
    Statement,
    Step,
    drive,
)
from executors.stores.sql.schema import migrate, pending_changes
from executors.stores.sql.store import SqlRunStore

logger = logging.getLogger("planstack.executors.stores.sqlite")
T = TypeVar("T")
CATALOG = Catalog(
    columns="SELECT m.name, p.name FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p WHERE m.type = 'table'",
    indexes="SELECT name FROM sqlite_master WHERE type = 'index'",
)


class SqliteDialect(SqlDialect):
    """`?` placeholders; `:now` is this process's clock, one value per program; no row locks (the write
    transaction holds the whole file)."""

    catalog = CATALOG
    placeholder = "?"

    def __init__(self, path: str, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.path = path
        self.display_url = f"sqlite://{path}"
        self._clock = clock
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="planstack-sqlite")
        self.conn: sqlite3.Connection = self._worker.submit(self._open).result()

    async def run(self, program: Program[T], *, write: bool) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._worker, self._run_here, program, write)

    async def reclaim(self) -> None:
        await self.read(_checkpoint())

    def _run_here(self, program: Program[T], write: bool) -> T:  # on the worker thread
        try:
            return self._run_raw(program, write)
        except (sqlite3.Error, OSError) as exc:
            what = "write" if write else "read"
            logger.error("run store %s: %s failed: %s", self.path, what, exc)
            raise RunStoreError(
                f"the run store cannot {what}: {exc}", hint="check free disk space and write permission"
            ) from exc

    def _run_raw(self, program: Program[T], write: bool) -> T:
        now = self._clock()
        cur = self.conn.cursor()
        bound = self.bound

        def execute(step: Step) -> Rows:
            if type(step) is not Statement:
                return NO_ROWS  # Lock, Announce: the write transaction holds the whole file; no one to notify
            sql, values, needs_now = bound(step)
            cur.execute(sql, values({**step.params, "now": now} if needs_now else step.params))
            return Rows(cur.fetchall() if cur.description else [], cur.rowcount)

        try:
            if not write:
                return drive(program, execute)
            cur.execute("BEGIN IMMEDIATE")
            try:
                result = drive(program, execute)
                cur.execute("COMMIT")
                return result
            except BaseException:
                # SQLite may have rolled back already (e.g. SQLITE_FULL): a second ROLLBACK would
                # fail and hide the real error.
                if self.conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self.conn.execute("ROLLBACK")
                raise
        finally:
            cur.close()

    def _open(self) -> sqlite3.Connection:  # on the worker thread
        try:
            if self.path != ":memory:":
                _create_private(Path(self.path))
            self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10.0)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across a process crash
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.execute("PRAGMA busy_timeout=10000")
            if self._run_raw(pending_changes(CATALOG), write=False):  # an up-to-date file is only read
                changed = self._run_raw(migrate(CATALOG), write=True)
                if changed:
                    logger.info("run store %s brought up to date: %s", self.path, "; ".join(changed))
            if self.path != ":memory:":
                _tighten(Path(self.path))
            return self.conn
        except (sqlite3.Error, OSError) as exc:
            raise RunStoreError(
                f"cannot open the run store {self.path}: {exc}", hint="check free disk space and write permission"
            ) from exc

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._worker, self._close_now)
        self._worker.shutdown(wait=True)

    def _close_now(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    def close(self) -> None:
        """Synchronous close, for code outside an event loop."""
        self._worker.submit(self._close_now).result()
        self._worker.shutdown(wait=True)


def _checkpoint() -> Program[None]:
    """Move the WAL into the file and truncate it, so that freed pages are reused."""
    yield Statement("PRAGMA wal_checkpoint(TRUNCATE)")


class SqliteRunStore(SqlRunStore):
    """The run store in one SQLite file (`sqlite:///ABSOLUTE/PATH`)."""

    def __init__(
        self, path: str | Path, *, config: RunsConfig | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = str(path)
        self.sqlite = SqliteDialect(self.path, clock)
        super().__init__(self.sqlite, config or RunsConfig())

    @classmethod
    def from_url(cls, url: str, config: RunsConfig) -> SqliteRunStore:
        path = url.split("://", 1)[1] if "://" in url else url
        if not path:
            raise ValueError(f"no file in the run store URL {url!r}; use sqlite:///ABSOLUTE/PATH")
        return cls(path, config=config)

    @property
    def _conn(self) -> sqlite3.Connection:
        """The connection itself (tests use it to make the disk full or the file read-only)."""
        return self.sqlite.conn

    def close(self) -> None:
        """Synchronous close, for code outside an event loop."""
        self.sqlite.close()


register_backend(("sqlite",), SqliteRunStore.from_url)


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

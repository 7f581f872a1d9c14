"""PostgreSQL, for several gateway replicas on one database: psycopg 3 and its async pool.

`PostgresDialect` opens the pool (autocommit connections; every program is one transaction) on
first use in the running event loop, which the store then belongs to, and brings the tables up to
date under an advisory lock (replicas may start together). `:now` is the database server's
`clock_timestamp()`, so replicas agree on which lease is live whatever their own clocks say. An
appended event is also a `NOTIFY planstack_events, '<run id>:<seq>'` sent on commit; every gateway
LISTENs on one dedicated connection (`listen`) and wakes the followers of that run at once, and
after a (re)connect every follower re-reads once. `Lock` is a transaction-scoped advisory lock: a
per-tenant one makes the quota check and the new run's insert one atomic step across replicas.
psycopg's and the pool's errors leave as `RunStoreError`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from executors.stores.base import redact_url, register_backend
from executors.stores.config import RunsConfig
from executors.stores.errors import RunStoreError
from executors.stores.feed import EventFeed, Listener
from executors.stores.sql.dialect import (
    Announce,
    Catalog,
    Lock,
    Program,
    Rows,
    SqlDialect,
    Step,
    drive_async,
)
from executors.stores.sql.schema import migrate, pending_changes
from executors.stores.sql.store import SqlRunStore

logger = logging.getLogger("planstack.executors.stores.postgres")
T = TypeVar("T")
CHANNEL = "planstack_events"
NOW = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
CATALOG = Catalog(
    columns="SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()",
    indexes="SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()",
)


class PostgresDialect(SqlDialect):
    """`%s` placeholders; `:now` is the server's clock; `FOR UPDATE` row locks."""

    catalog = CATALOG
    placeholder = "%s"
    now_sql = NOW

    def __init__(self, url: str, config: RunsConfig) -> None:
        super().__init__()
        self.url = url
        self.display_url = redact_url(url)
        self.config = config
        self._pool: AsyncConnectionPool | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Lock | None = None

    def _escape(self, sql: str) -> str:
        return sql.replace("%", "%%")

    def _lock_rows(self, sql: str) -> str:
        return sql + " FOR UPDATE"

    async def run(self, program: Program[T], *, write: bool) -> T:
        pool = await self._ensure_pool()
        try:
            async with pool.connection() as conn:
                return await self._run_on(conn, program)
        except (psycopg.Error, PoolTimeout, OSError) as exc:
            raise _unavailable("write" if write else "read", self.display_url, exc) from exc
        finally:
            program.close()

    async def _run_on(self, conn: psycopg.AsyncConnection[Any], program: Program[T]) -> T:
        async with conn.transaction(), conn.cursor() as cur:

            async def execute(step: Step) -> Rows:
                if isinstance(step, Lock):
                    lock = (
                        "SELECT pg_advisory_xact_lock(%(key)s)"
                        if isinstance(step.key, int)
                        else ("SELECT pg_advisory_xact_lock(hashtext(%(key)s))")
                    )
                    await cur.execute(lock, {"key": step.key})
                    return Rows([], 0)
                if isinstance(step, Announce):
                    await cur.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{step.run_id}:{step.seq}"))
                    return Rows([], 0)
                sql, values, _ = self.bound(step)
                await cur.execute(sql, values(step.params))
                rows = await cur.fetchall() if cur.description is not None else []
                return Rows(rows, cur.rowcount)

            return await drive_async(program, execute)

    async def _ensure_pool(self) -> AsyncConnectionPool:
        loop = asyncio.get_running_loop()
        if self._pool is not None:
            if self._pool_loop is not loop:
                raise RuntimeError("a PostgresRunStore is bound to the event loop that first used it")
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                pool = AsyncConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self.config.pool_size,
                    open=False,
                    kwargs={"autocommit": True},
                    timeout=self.config.connect_timeout_s,
                    name="planstack-runs",
                )
                try:
                    await pool.open(wait=True, timeout=self.config.connect_timeout_s)
                    async with pool.connection() as conn:
                        if await self._run_on(conn, pending_changes(CATALOG)):
                            changed = await self._run_on(conn, migrate(CATALOG))
                            if changed:
                                logger.info("run store %s brought up to date: %s", self.display_url, "; ".join(changed))
                except (psycopg.Error, PoolTimeout, OSError) as exc:
                    await pool.close()
                    raise _unavailable("connect", self.display_url, exc) from exc
                self._pool, self._pool_loop = pool, loop
        return self._pool

    async def aclose(self) -> None:
        if self._pool is not None and self._pool_loop is asyncio.get_running_loop():
            await self._pool.close()
        self._pool = self._pool_loop = None

    def listener(self) -> Listener:
        return self.listen

    async def listen(self, feed: EventFeed) -> None:
        """LISTEN on a dedicated connection; once listening (first time or after a reconnect) every
        follower re-reads once: events appended while nobody listened were not announced (the feed's
        watch tick would notice them too, a tick later)."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.url, autocommit=True, connect_timeout=int(self.config.connect_timeout_s)
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    feed.listener_up()
                    async for note in conn.notifies():
                        run_id, _, seq = note.payload.rpartition(":")
                        if seq.isdigit():
                            feed.publish(run_id, int(seq))
            except (psycopg.Error, OSError) as exc:
                logger.warning("event listener on %s: %s; reconnecting", self.display_url, exc)
                feed.listener_down()
                await asyncio.sleep(1.0)


class PostgresRunStore(SqlRunStore):
    """The run store in a PostgreSQL database (`postgresql://user@host:port/db`)."""

    def __init__(self, url: str, *, config: RunsConfig | None = None) -> None:
        self.url = url
        config = config or RunsConfig()
        super().__init__(PostgresDialect(url, config), config)

    @classmethod
    def from_url(cls, url: str, config: RunsConfig) -> PostgresRunStore:
        return cls(url, config=config)


register_backend(("postgresql", "postgres"), PostgresRunStore.from_url)


def _unavailable(what: str, where: str, exc: BaseException) -> RunStoreError:
    logger.error("run store %s: %s failed: %s", where, what, exc)
    detail = type(exc).__name__ if not str(exc) else str(exc).splitlines()[0]
    return RunStoreError(f"the run store cannot {what}: {detail}", hint="check that the database is reachable")

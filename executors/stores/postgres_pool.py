"""`PostgresPool`: the connections of `PostgresRunStore`, and its LISTEN connection.

psycopg 3's async pool (autocommit connections; `tx()` is one transaction), opened on first use in
the running event loop, which it then belongs to; the tables are created on that first use under an
advisory lock (replicas may start together). psycopg's and the pool's errors leave as
`RunStoreError`. `listen(feed)` holds one dedicated connection LISTENing on the events channel and
reconnects after a failure (every follower then re-reads once).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from executors.stores.base import redact_url
from executors.stores.config import RunsConfig
from executors.stores.errors import RunStoreError
from executors.stores.feed import EventFeed
from executors.stores.sql import SCHEMA_POSTGRES

logger = logging.getLogger("planstack.executors.stores.postgres")
CHANNEL = "planstack_events"
SCHEMA_LOCK = 727_274_001  # advisory lock key of the schema creation


class PostgresPool:
    def __init__(self, url: str, config: RunsConfig) -> None:
        self.url = url
        self.display_url = redact_url(url)
        self.config = config
        self._pool: AsyncConnectionPool | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Lock | None = None

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
                    async with pool.connection() as conn, conn.transaction():
                        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                        for statement in SCHEMA_POSTGRES.split(";"):
                            if statement.strip():
                                await conn.execute(statement)
                except (psycopg.Error, PoolTimeout, OSError) as exc:
                    await pool.close()
                    raise _unavailable("connect", self.display_url, exc) from exc
                self._pool, self._pool_loop = pool, loop
        return self._pool

    @asynccontextmanager
    async def tx(self, what: str = "write") -> AsyncIterator[psycopg.AsyncCursor[Any]]:
        pool = await self._ensure_pool()
        try:
            async with pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                yield cur
        except (psycopg.Error, PoolTimeout, OSError) as exc:
            raise _unavailable(what, self.display_url, exc) from exc

    async def aclose(self) -> None:
        if self._pool is not None and self._pool_loop is asyncio.get_running_loop():
            await self._pool.close()
        self._pool = self._pool_loop = None

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


def _unavailable(what: str, where: str, exc: BaseException) -> RunStoreError:
    logger.error("run store %s: %s failed: %s", where, what, exc)
    detail = type(exc).__name__ if not str(exc) else str(exc).splitlines()[0]
    return RunStoreError(f"the run store cannot {what}: {detail}", hint="check that the database is reachable")

"""`SqlRunStore`: the one SQL run store, every protocol of `RunStore` over one `SqlDialect`."""

from __future__ import annotations

from executors.stores.config import RunsConfig
from executors.stores.feed import EventFeed
from executors.stores.sql.cache import SqlCache
from executors.stores.sql.dialect import SqlDialect
from executors.stores.sql.events import SqlEvents
from executors.stores.sql.leases import SqlLeases
from executors.stores.sql.retention import SqlRetention
from executors.stores.sql.runs import SqlRuns
from executors.stores.sql.steering import SqlDeliveries, SqlSteering
from executors.stores.sql.tool_calls import SqlToolCalls
from executors.stores.sql.toolsets import SqlToolsets


class SqlRunStore(
    SqlRuns, SqlEvents, SqlLeases, SqlSteering, SqlDeliveries, SqlCache, SqlRetention, SqlToolsets, SqlToolCalls
):
    """Use from one event loop at a time (PostgreSQL's connections belong to the loop that opened them)."""

    def __init__(self, db: SqlDialect, config: RunsConfig) -> None:
        self.db = db
        self.config = config
        self.feed = EventFeed(self._watch_state, config.follow_poll_s, db.listener())

    @property
    def display_url(self) -> str:
        return self.db.display_url

    async def aclose(self) -> None:
        await self.feed.aclose()
        await self.db.aclose()

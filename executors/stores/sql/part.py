"""What every part of the SQL run store shares: the database (through its dialect) and the settings."""

from __future__ import annotations

from executors.stores.config import RunsConfig
from executors.stores.sql.dialect import SqlDialect


class SqlPart:
    """Base of the store's parts (one per protocol); `SqlRunStore` combines them over one dialect."""

    db: SqlDialect
    config: RunsConfig

"""The run store's tables, written once for SQLite and PostgreSQL, and how a database gets them.

JSON is kept as text (the same bytes on both databases) and times as Unix seconds (`DOUBLE
PRECISION`: REAL affinity on SQLite). `runs.bytes` is the run's stored size (plans, request,
results, events), kept up to date by every write, and `cache.bytes` an entry's, so per-tenant and
total sizes are one SUM per table.

A database is brought to this layout when a store opens it (`migrate`): missing tables are created,
then columns newer than a table's first layout are added (and filled for existing rows, where a
`backfill` says how), then missing indexes. An up-to-date database is only read (a read-only SQLite
file still opens). A new table is one more `Table` in `TABLES`; a new column is one more `Column`
at the end of its table (nullable or with a default, so that it can be added to existing rows).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from executors.stores.sql.dialect import Catalog, Lock, Program, Statement

SCHEMA_LOCK = 727_274_001
"""Key of the lock that serialises schema changes (replicas may start together)."""


@dataclass(frozen=True)
class Column:
    name: str
    definition: str
    backfill: str | None = None
    """SQL expression that fills the column for the rows of a store written before it existed."""


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    keys: tuple[str, ...] = ()
    indexes: tuple[tuple[str, str], ...] = ()
    """(index name, `ON table (columns)`)."""

    def create(self) -> str:
        parts = [f"{c.name} {c.definition}" for c in self.columns] + list(self.keys)
        return f"CREATE TABLE IF NOT EXISTS {self.name} (" + ", ".join(parts) + ")"


RUN_BYTES = (
    "LENGTH(plan_json) * 2 + LENGTH(request) + COALESCE(LENGTH(tools_json), 0)"
    " + (SELECT COALESCE(SUM(LENGTH(result_json) + COALESCE(LENGTH(output_json), 0)), 0)"
    " FROM node_results WHERE node_results.run_id = runs.run_id)"
    " + (SELECT COALESCE(SUM(LENGTH(data_json) + 64), 0) FROM events WHERE events.run_id = runs.run_id)"
)
RUN_KEY = "TEXT NOT NULL REFERENCES runs (run_id)"
CACHE_BYTES = "LENGTH(namespace) + LENGTH(tenant) + LENGTH(key) + LENGTH(value)"
"""A cache entry's size (`cache.bytes`); entries stored before the column existed get `stored_at` 0:
the oldest, the first to go when the store is over its total."""

RUNS = Table(
    "runs",
    (
        Column("run_id", "TEXT PRIMARY KEY"),
        Column("tenant", "TEXT NOT NULL"),
        Column("request", "TEXT NOT NULL"),
        Column("plan_json", "TEXT NOT NULL"),
        Column("status", "TEXT NOT NULL"),
        Column("round", "INTEGER NOT NULL DEFAULT 0"),
        Column("replans", "INTEGER NOT NULL DEFAULT 0"),
        Column("error_json", "TEXT"),
        Column("created_at", "DOUBLE PRECISION NOT NULL"),
        Column("updated_at", "DOUBLE PRECISION NOT NULL"),
        # -- leases and accounting (added to stores written before them)
        Column("lease_owner", "TEXT"),
        Column("lease_epoch", "INTEGER NOT NULL DEFAULT 0"),
        Column("lease_expires_at", "DOUBLE PRECISION"),
        Column("takeovers", "INTEGER NOT NULL DEFAULT 0"),
        Column(
            "event_seq",
            "INTEGER NOT NULL DEFAULT 0",
            "(SELECT COALESCE(MAX(seq), 0) FROM events WHERE events.run_id = runs.run_id)",
        ),
        Column("bytes", "BIGINT NOT NULL DEFAULT 0", RUN_BYTES),
        # -- people in the loop, webhooks, the planner's record
        Column("approval_json", "TEXT"),
        Column("escalation", "TEXT"),
        Column("escalation_json", "TEXT"),
        Column("webhook_url", "TEXT"),
        Column("budget_round", "INTEGER NOT NULL DEFAULT 0"),
        Column("planner_json", "TEXT"),
        # -- the run's own tool definitions, and the tool calls it waits for the caller to answer
        Column("tools_json", "TEXT"),
        Column("action_json", "TEXT"),
    ),
    indexes=(
        ("runs_by_tenant", "ON runs (tenant, created_at)"),
        ("runs_by_status", "ON runs (status, updated_at)"),
        ("runs_by_escalation", "ON runs (tenant, escalation)"),
    ),
)
TABLES: tuple[Table, ...] = (
    RUNS,
    Table(
        "run_plans",
        (
            Column("run_id", RUN_KEY),
            Column("round", "INTEGER NOT NULL"),
            Column("plan_json", "TEXT NOT NULL"),
            Column("created_at", "DOUBLE PRECISION NOT NULL"),
        ),
        keys=("PRIMARY KEY (run_id, round)",),
    ),
    Table(
        "node_results",
        (
            Column("run_id", RUN_KEY),
            Column("round", "INTEGER NOT NULL"),
            Column("node_id", "TEXT NOT NULL"),
            Column("tool", "TEXT NOT NULL"),
            Column("status", "TEXT NOT NULL"),
            Column("attempts", "INTEGER NOT NULL"),
            Column("input_hash", "TEXT"),
            Column("output_sha256", "TEXT"),
            Column("output_json", "TEXT"),
            Column("result_json", "TEXT NOT NULL"),
            Column("committed_at", "DOUBLE PRECISION NOT NULL"),
        ),
        keys=("PRIMARY KEY (run_id, round, node_id)",),
    ),
    Table(
        "events",
        (
            Column("run_id", RUN_KEY),
            Column("seq", "INTEGER NOT NULL"),
            Column("type", "TEXT NOT NULL"),
            Column("round", "INTEGER NOT NULL"),
            Column("node_id", "TEXT"),
            Column("data_json", "TEXT NOT NULL"),
            Column("ts", "DOUBLE PRECISION NOT NULL"),
        ),
        keys=("PRIMARY KEY (run_id, seq)",),
    ),
    Table(
        "webhook_deliveries",
        (
            Column("run_id", RUN_KEY),
            Column("seq", "INTEGER NOT NULL"),
            Column("event", "TEXT NOT NULL"),
            Column("state", "TEXT NOT NULL"),
            Column("attempts", "INTEGER NOT NULL"),
            Column("status_code", "INTEGER"),
            Column("error", "TEXT"),
            Column("updated_at", "DOUBLE PRECISION NOT NULL"),
        ),
        keys=("PRIMARY KEY (run_id, seq)",),
    ),
    Table(
        "cache",
        (
            Column("namespace", "TEXT NOT NULL"),
            Column("tenant", "TEXT NOT NULL"),
            Column("key", "TEXT NOT NULL"),
            Column("value", "TEXT NOT NULL"),
            Column("expires_at", "DOUBLE PRECISION NOT NULL"),
            # -- accounting: what an entry costs its tenant and the retention total, and its age
            Column("bytes", "BIGINT NOT NULL DEFAULT 0", CACHE_BYTES),
            Column("stored_at", "DOUBLE PRECISION NOT NULL DEFAULT 0"),
        ),
        keys=("PRIMARY KEY (namespace, tenant, key)",),
        indexes=(
            ("cache_by_expiry", "ON cache (expires_at)"),
            ("cache_by_tenant", "ON cache (tenant, expires_at)"),
        ),
    ),
    Table(
        "toolsets",
        (
            Column("toolset_id", "TEXT PRIMARY KEY"),
            Column("tenant", "TEXT NOT NULL"),
            Column("name", "TEXT NOT NULL"),
            Column("kind", "TEXT NOT NULL"),
            Column("config_json", "TEXT NOT NULL"),
            Column("credential", "TEXT"),
            Column("tools_json", "TEXT NOT NULL"),
            Column("version", "TEXT NOT NULL"),
            Column("revision", "INTEGER NOT NULL DEFAULT 1"),
            Column("created_at", "DOUBLE PRECISION NOT NULL"),
            Column("updated_at", "DOUBLE PRECISION NOT NULL"),
            Column("refreshed_at", "DOUBLE PRECISION NOT NULL"),
        ),
        keys=("UNIQUE (tenant, name)",),
    ),
    Table(
        "tool_answers",
        (
            Column("run_id", RUN_KEY),
            Column("round", "INTEGER NOT NULL"),
            Column("node_id", "TEXT NOT NULL"),
            Column("input_hash", "TEXT NOT NULL"),
            Column("output_json", "TEXT"),
            Column("error_json", "TEXT"),
            Column("answered_by", "TEXT"),
            Column("answered_at", "DOUBLE PRECISION NOT NULL"),
        ),
        keys=("PRIMARY KEY (run_id, round, node_id)",),
    ),
)
RUN_TABLES = ("tool_answers", "webhook_deliveries", "events", "node_results", "run_plans", "runs")
"""Every table holding rows of a run, dependants first (the order a run is deleted in)."""


def pending_changes(catalog: Catalog, tables: Iterable[Table] = TABLES) -> Program[list[Statement]]:
    """The DDL (and backfills) this database still needs, in order; empty when it is up to date."""
    present: dict[str, set[str]] = {}
    for table_name, column_name in (yield Statement(catalog.columns)).rows:
        present.setdefault(str(table_name), set()).add(str(column_name))
    indexes = {str(row[0]) for row in (yield Statement(catalog.indexes)).rows}
    tables = list(tables)
    changes = [Statement(table.create()) for table in tables if table.name not in present]
    for table in tables:
        if table.name not in present:
            continue  # created above, with every column
        added = [column for column in table.columns if column.name not in present[table.name]]
        changes += [Statement(f"ALTER TABLE {table.name} ADD COLUMN {c.name} {c.definition}") for c in added]
        changes += [Statement(f"UPDATE {table.name} SET {c.name} = {c.backfill}") for c in added if c.backfill]
    for table in tables:
        changes += [
            Statement(f"CREATE INDEX IF NOT EXISTS {name} {on}") for name, on in table.indexes if name not in indexes
        ]
    return changes


def migrate(catalog: Catalog, tables: Iterable[Table] = TABLES) -> Program[list[str]]:
    """Apply what `pending_changes` finds, under the schema lock (a write program); returns what it did."""
    yield Lock(SCHEMA_LOCK)
    changes = yield from pending_changes(catalog, tables)  # again: another process may have migrated meanwhile
    for change in changes:  # noqa: UP028 - a list cannot receive the rows a dialect sends back
        yield change
    return [change.sql.split(" (", 1)[0] for change in changes]

"""The SQL store's tables and how a new concern gets its own, on both backends (SQLite file, real
PostgreSQL): a `Table` declared once is created in an existing store, and a program written once
reads and writes it with the shared SQL (`:name` parameters, `:now` the store's clock)."""

from __future__ import annotations

from collections.abc import Callable

from exec_helpers import run

from executors.stores import RunStore, SqlRunStore
from executors.stores.sql.dialect import Lock, Program, Statement
from executors.stores.sql.schema import TABLES, Column, Table, migrate, pending_changes

TOYS = Table(
    "toys",
    (
        Column("tenant", "TEXT NOT NULL"),
        Column("name", "TEXT NOT NULL"),
        Column("made_at", "DOUBLE PRECISION NOT NULL"),
    ),
    keys=("PRIMARY KEY (tenant, name)",),
    indexes=(("toys_by_time", "ON toys (made_at)"),),
)


def put_toy(tenant: str, name: str) -> Program[float]:
    yield Lock(tenant)
    row = (
        yield Statement(
            "INSERT INTO toys (tenant, name, made_at) VALUES (:tenant, :name, :now)"
            " ON CONFLICT (tenant, name) DO UPDATE SET made_at = excluded.made_at RETURNING made_at",
            {"tenant": tenant, "name": name},
        )
    ).one()
    return float(row[0])


def toys_of(tenant: str) -> Program[list[str]]:
    rows = yield Statement("SELECT name FROM toys WHERE tenant = :tenant ORDER BY name", {"tenant": tenant})
    return [str(row[0]) for row in rows.rows]


def test_a_new_table_is_added_to_an_existing_store_and_used_by_programs(make_store: Callable[..., RunStore]) -> None:
    async def go() -> None:
        store = make_store()
        assert isinstance(store, SqlRunStore)
        try:
            assert await store.get_run("a", "none") is None  # opened: the standard tables exist
            assert await store.db.read(pending_changes(store.db.catalog)) == []
            tables = (*TABLES, TOYS)
            assert [
                change.sql.split(" (")[0] for change in await store.db.read(pending_changes(store.db.catalog, tables))
            ] == [
                "CREATE TABLE IF NOT EXISTS toys",
                "CREATE INDEX IF NOT EXISTS toys_by_time ON toys",
            ]
            await store.db.write(migrate(store.db.catalog, tables))
            assert await store.db.read(pending_changes(store.db.catalog, tables)) == []
            made = await store.db.write(put_toy("alice", "kite"))
            await store.db.write(put_toy("bob", "ball"))
            assert made > 0 and await store.db.read(toys_of("alice")) == ["kite"]
        finally:
            await store.aclose()

    run(go())


def test_a_column_added_later_is_added_to_existing_rows_with_its_backfill(make_store: Callable[..., RunStore]) -> None:
    grown = Table("toys", (*TOYS.columns, Column("size", "INTEGER NOT NULL DEFAULT 0", "LENGTH(name)")), TOYS.keys)

    async def go() -> None:
        store = make_store()
        assert isinstance(store, SqlRunStore)
        try:
            await store.db.write(migrate(store.db.catalog, (*TABLES, TOYS)))
            await store.db.write(put_toy("alice", "kite"))
            assert await store.db.write(migrate(store.db.catalog, (*TABLES, grown))) == [
                "ALTER TABLE toys ADD COLUMN size INTEGER NOT NULL DEFAULT 0",
                "UPDATE toys SET size = LENGTH(name)",
            ]
            rows = await store.db.read(_sizes())
            assert rows == [("kite", 4)]
        finally:
            await store.aclose()

    run(go())


def _sizes() -> Program[list[tuple[str, int]]]:
    rows = yield Statement("SELECT name, size FROM toys")
    return [(str(row[0]), int(row[1])) for row in rows.rows]

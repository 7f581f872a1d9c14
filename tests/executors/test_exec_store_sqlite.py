"""What only the SQLite backend promises: WAL, private files (0600), calls off the event loop, and
stores written before leases existed keep working."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import threading
from pathlib import Path

from exec_helpers import plan_of, run

from executors.stores import RunRecord, SqliteRunStore, open_run_store

PLAN = plan_of({"id": "n1", "tool": "echo", "args": {"label": "a"}})


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_wal_mode_and_private_files(tmp_path: Path) -> None:
    path = tmp_path / "home" / "runs.sqlite3"
    old_umask = os.umask(0o022)  # a usual umask would give 0644
    try:

        async def go() -> None:
            store = open_run_store(f"sqlite://{path}")
            lease = await store.create_run(RunRecord(run_id="r1", tenant="a", request="x", plan=PLAN), owner="o", ttl_s=9)
            await store.append_event(lease, "run_started")
            for suffix in ("", "-wal", "-shm"):
                assert mode(path.with_name(path.name + suffix)) == 0o600, suffix
            await store.aclose()

        run(go())
    finally:
        os.umask(old_umask)
    assert mode(path.parent) == 0o700
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()


def test_an_existing_world_readable_store_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    SqliteRunStore(path).close()
    os.chmod(path, 0o644)
    SqliteRunStore(path).close()
    assert mode(path) == 0o600


def test_calls_run_on_the_store_thread_not_the_event_loop(tmp_path: Path) -> None:
    store = SqliteRunStore(tmp_path / "runs.sqlite3")
    seen: list[str] = []
    store._conn.set_trace_callback(lambda sql: seen.append(threading.current_thread().name))

    async def go() -> None:
        assert await store.get_run("a", "nope") is None
        seen.append("loop:" + threading.current_thread().name)
        await store.aclose()

    asyncio.run(go())
    assert seen[0].startswith("planstack-sqlite") and seen[-1] == "loop:MainThread"
    assert all(name.startswith("planstack-sqlite") for name in seen[:-1])


def test_a_store_from_before_leases_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE runs (run_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, request TEXT NOT NULL,
            plan_json TEXT NOT NULL, status TEXT NOT NULL, round INTEGER NOT NULL DEFAULT 0,
            replans INTEGER NOT NULL DEFAULT 0, error_json TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL);
        CREATE TABLE events (run_id TEXT NOT NULL REFERENCES runs (run_id), seq INTEGER NOT NULL,
            type TEXT NOT NULL, round INTEGER NOT NULL, node_id TEXT, data_json TEXT NOT NULL, ts REAL NOT NULL,
            PRIMARY KEY (run_id, seq));
        """
    )
    conn.execute(
        "INSERT INTO runs VALUES ('r1', 'a', 'old run', ?, 'running', 0, 0, NULL, 1, 1)", (PLAN.model_dump_json(),)
    )
    conn.executemany(
        "INSERT INTO events VALUES ('r1', ?, 'node_started', 0, 'n1', '{}', 1)", [(1,), (2,)]
    )
    conn.commit()
    conn.close()

    async def go() -> None:
        store = SqliteRunStore(path)
        record = await store.get_run("a", "r1")
        assert record is not None and record.effective_status == "interrupted"  # nobody drives it
        lease = await store.acquire_lease("a", "r1", owner="new", ttl_s=9)
        assert lease is not None
        event = await store.append_event(lease, "run_started")
        assert event.seq == 3  # numbering continues after the old events
        assert (await store.usage("a")).stored_bytes > 0
        await store.aclose()

    run(go())


LAYOUT_BEFORE_ONE_SQL_STORE = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, request TEXT NOT NULL, plan_json TEXT NOT NULL,
    status TEXT NOT NULL, round INTEGER NOT NULL DEFAULT 0, replans INTEGER NOT NULL DEFAULT 0, error_json TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, lease_owner TEXT, lease_epoch INTEGER NOT NULL DEFAULT 0,
    lease_expires_at REAL, takeovers INTEGER NOT NULL DEFAULT 0, event_seq INTEGER NOT NULL DEFAULT 0,
    bytes BIGINT NOT NULL DEFAULT 0, approval_json TEXT, escalation TEXT, escalation_json TEXT, webhook_url TEXT,
    budget_round INTEGER NOT NULL DEFAULT 0, planner_json TEXT);
CREATE TABLE run_plans (run_id TEXT NOT NULL REFERENCES runs (run_id), round INTEGER NOT NULL,
    plan_json TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (run_id, round));
CREATE TABLE node_results (run_id TEXT NOT NULL REFERENCES runs (run_id), round INTEGER NOT NULL,
    node_id TEXT NOT NULL, tool TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, input_hash TEXT,
    output_sha256 TEXT, output_json TEXT, result_json TEXT NOT NULL, committed_at REAL NOT NULL,
    PRIMARY KEY (run_id, round, node_id));
CREATE TABLE events (run_id TEXT NOT NULL REFERENCES runs (run_id), seq INTEGER NOT NULL, type TEXT NOT NULL,
    round INTEGER NOT NULL, node_id TEXT, data_json TEXT NOT NULL, ts REAL NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE webhook_deliveries (run_id TEXT NOT NULL REFERENCES runs (run_id), seq INTEGER NOT NULL,
    event TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL, status_code INTEGER, error TEXT,
    updated_at REAL NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE cache (namespace TEXT NOT NULL, tenant TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    expires_at REAL NOT NULL, PRIMARY KEY (namespace, tenant, key));
CREATE INDEX runs_by_tenant ON runs (tenant, created_at);
CREATE INDEX runs_by_status ON runs (status, updated_at);
CREATE INDEX runs_by_escalation ON runs (tenant, escalation);
CREATE INDEX cache_by_expiry ON cache (expires_at);
"""
"""The tables as the two hand-written SQLite and PostgreSQL stores created them (REAL for times)."""


def test_a_store_written_by_the_previous_layout_is_brought_up_to_date_once_and_keeps_working(tmp_path: Path) -> None:
    """The one SQL store kept the tables of the two hand-written stores; since then the cache has grown
    (each entry's size, backfilled, and when it was stored: plan records count toward their tenant's bytes
    and the retention total) and the toolsets' tables and the runs' tool columns were added."""
    path = tmp_path / "runs.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(LAYOUT_BEFORE_ONE_SQL_STORE)
    conn.execute(
        "INSERT INTO runs (run_id, tenant, request, plan_json, status, created_at, updated_at, event_seq, bytes)"
        " VALUES ('r1', 'a', 'old run', ?, 'succeeded', 1, 1, 1, 100)",
        (PLAN.model_dump_json(),),
    )
    conn.execute("INSERT INTO events VALUES ('r1', 1, 'run_finished', 0, NULL, '{\"status\": \"succeeded\"}', 1)")
    conn.execute("INSERT INTO cache VALUES ('plans', 'a', 'plan_1', 'an old plan record', 1e12)")
    conn.commit()
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.close()

    async def go() -> None:
        store = SqliteRunStore(path)
        record = await store.get_run("a", "r1")
        assert record is not None and record.status == "succeeded"
        assert [e.type for e in await store.events("a", "r1")] == ["run_finished"]
        usage = await store.usage("a")
        assert usage.cache_bytes == len("plans" "a" "plan_1" "an old plan record")  # backfilled
        assert usage.stored_bytes == 100 + usage.cache_bytes
        lease = await store.create_run(RunRecord(run_id="r2", tenant="a", request="new", plan=PLAN), owner="o", ttl_s=9)
        assert (await store.append_event(lease, "run_started")).seq == 1
        await store.aclose()

    run(go())
    conn = sqlite3.connect(path)
    migrated = conn.execute("PRAGMA schema_version").fetchone()[0]
    assert migrated > version
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"toolsets", "tool_answers"} <= tables
    columns = {table: [row[1] for row in conn.execute(f"PRAGMA table_info({table})")] for table in ("runs", "cache")}
    assert {"tools_json", "action_json"} <= set(columns["runs"])
    assert columns["cache"][-2:] == ["bytes", "stored_at"]
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    assert {"runs_by_tenant", "runs_by_status", "runs_by_escalation", "cache_by_expiry", "cache_by_tenant"} <= indexes
    conn.close()

    async def again() -> None:
        store = SqliteRunStore(path)
        assert (await store.get_run("a", "r1")) is not None
        await store.aclose()

    run(again())
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA schema_version").fetchone()[0] == migrated  # an up-to-date file is only read
    conn.close()

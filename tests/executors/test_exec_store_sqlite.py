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

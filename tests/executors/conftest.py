"""The run store under test, once per backend: every test taking `store_url` / `make_store` runs on
SQLite (a temp file) and on a REAL PostgreSQL (a fresh database on the session's server)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from executors.stores import RunsConfig, RunStore, open_run_store

FAST_LEASES: dict[str, Any] = {"lease_ttl_s": 30.0, "heartbeat_s": 0.2, "follow_poll_s": 0.05}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'runs.sqlite3'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def make_store(store_url: str) -> Callable[..., RunStore]:
    """A store on the test's backend; call it inside the test's event loop, close it with `aclose`."""

    def make(**overrides: Any) -> RunStore:
        return open_run_store(store_url, config=RunsConfig(**{**FAST_LEASES, **overrides}))

    return make

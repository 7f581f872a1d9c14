"""Run stores: the `RunStore` protocols, the one SQL store and its dialects, and `open_run_store`
(the one way to build one).

    open_run_store(settings)                      # runs.store_url, default sqlite:///$home/runs.sqlite3
    open_run_store("postgresql://planstack@db:5432/planstack")
    open_run_store("sqlite:///var/lib/planstack/runs.sqlite3")

Backends register themselves by URL scheme (`register_backend`); both are `SqlRunStore` over a
dialect (`executors.stores.sql`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from executors.stores import postgres as _postgres  # noqa: F401 - registers postgresql://
from executors.stores import sqlite as _sqlite  # noqa: F401 - registers sqlite://
from executors.stores.base import (
    BACKENDS,
    RunEvents,
    RunLeases,
    RunRecords,
    RunRetention,
    RunSteering,
    RunStore,
    RunToolCalls,
    TenantCache,
    TenantToolsets,
    WebhookDeliveries,
    url_scheme,
)
from executors.stores.config import RunsConfig
from executors.stores.errors import (
    AlreadyAnswered,
    LeaseLost,
    QuotaExceeded,
    RunBusy,
    RunStoreError,
    StoredBytesQuota,
    StoredRunsQuota,
    ToolsetExists,
    TooManyActiveRuns,
    TooManyToolsets,
)
from executors.stores.feed import Subscription
from executors.stores.postgres import PostgresRunStore
from executors.stores.records import (
    TERMINAL_STATUSES,
    EscalationState,
    EventType,
    Lease,
    PurgeReport,
    ReopenFrom,
    RunEvent,
    RunRecord,
    RunStatus,
    RunUpdate,
    TenantQuota,
    TenantUsage,
    WebhookDelivery,
)
from executors.stores.sql.store import SqlRunStore
from executors.stores.sqlite import SqliteRunStore
from executors.stores.tool_records import ToolAnswer, ToolsetKind, ToolsetRecord

__all__ = [
    "AlreadyAnswered",
    "BACKENDS",
    "TERMINAL_STATUSES",
    "EscalationState",
    "EventType",
    "Lease",
    "LeaseLost",
    "PostgresRunStore",
    "PurgeReport",
    "ReopenFrom",
    "QuotaExceeded",
    "RunBusy",
    "RunEvent",
    "RunEvents",
    "RunLeases",
    "RunRecord",
    "RunRecords",
    "RunRetention",
    "RunStatus",
    "RunSteering",
    "RunStore",
    "RunStoreError",
    "RunToolCalls",
    "RunUpdate",
    "RunsConfig",
    "SqlRunStore",
    "SqliteRunStore",
    "StoredBytesQuota",
    "StoredRunsQuota",
    "Subscription",
    "TenantCache",
    "TenantQuota",
    "TenantToolsets",
    "ToolAnswer",
    "ToolsetExists",
    "ToolsetKind",
    "ToolsetRecord",
    "TooManyToolsets",
    "TenantUsage",
    "TooManyActiveRuns",
    "WebhookDeliveries",
    "WebhookDelivery",
    "default_store_url",
    "open_run_store",
    "url_scheme",
]


class HasRunSettings(Protocol):
    """What `open_run_store` needs of the gateway's settings: the `runs` section and the home folder."""

    @property
    def runs(self) -> RunsConfig: ...

    @property
    def home(self) -> Path: ...


def default_store_url(home: Path) -> str:
    return f"sqlite://{(home / 'runs.sqlite3').resolve()}"


def open_run_store(target: str | HasRunSettings, *, config: RunsConfig | None = None) -> RunStore:
    """The run store named by a URL, or by settings (`runs.store_url`, else SQLite in the home folder).
    A bare path is a SQLite file."""
    if isinstance(target, str):
        url, runs = target, config or RunsConfig()
    else:
        runs = config or target.runs
        url = runs.store_url or default_store_url(target.home)
    scheme = url_scheme(url) if "://" in url else "sqlite"
    factory = BACKENDS.get(scheme)
    if factory is None:
        known = ", ".join(f"{name}://" for name in sorted(BACKENDS))
        raise ValueError(f"unknown run store {scheme!r} in runs.store_url; known: {known}")
    return factory(url, runs)

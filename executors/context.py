"""Run-scoped context visible to tools: which tenant (and which run) the current call belongs to.

The run's driver sets it when a run starts executing; asyncio tasks and `asyncio.to_thread` copy the
context, so every tool call of that run (sync or async) sees its own run's tenant, never another's.
Tools that hold tenant-scoped data (the knowledge base's private collections, the model's cache
salt) read it here instead of taking a tenant argument the model could write; remote calls derive
their idempotency keys from the run id (executors.sources.tool_source.CallContext).
"""

from __future__ import annotations

from contextvars import ContextVar

_RUN_TENANT: ContextVar[str | None] = ContextVar("planstack_run_tenant", default=None)
_RUN_ID: ContextVar[str | None] = ContextVar("planstack_run_id", default=None)


def run_tenant() -> str | None:
    """The tenant of the run whose tool is executing; None outside a run."""
    return _RUN_TENANT.get()


def run_id() -> str | None:
    """The id of the run whose tool is executing; None outside a run."""
    return _RUN_ID.get()


def set_run_tenant(tenant: str | None, run: str | None = None) -> None:
    _RUN_TENANT.set(tenant)
    _RUN_ID.set(run)

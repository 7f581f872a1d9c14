"""Run-scoped context visible to tools: which tenant the current run belongs to.

`RunService` sets it when a run starts executing; asyncio tasks and `asyncio.to_thread` copy the
context, so every tool call of that run (sync or async) sees its own run's tenant, never another's.
Tools that hold tenant-scoped data (the knowledge base's private collections) read it here instead
of taking a tenant argument the model could write.
"""

from __future__ import annotations

from contextvars import ContextVar

_RUN_TENANT: ContextVar[str | None] = ContextVar("planstack_run_tenant", default=None)


def run_tenant() -> str | None:
    """The tenant of the run whose tool is executing; None outside a run."""
    return _RUN_TENANT.get()


def set_run_tenant(tenant: str | None) -> None:
    _RUN_TENANT.set(tenant)

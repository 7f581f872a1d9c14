"""A gateway's background duties over the shared run store: takeover and retention.

- Takeover: every `runs.takeover_interval_s`, runs whose lease expired (their driver died) are
  acquired (one replica wins each, atomically) and continued without redoing committed nodes. A run
  taken over `runs.max_takeovers` times is left `interrupted` (a run that keeps killing its drivers
  must not take the whole fleet down); `POST /v1/runs/{id}/resume` still continues it.
- Approval expiry: every `approvals.expiry_sweep_s`, requests past their expiry are closed as
  `expired` (the run stops and escalates); so are tool calls handed to a run's caller that nobody
  answered in time (the node fails with `timeout`). Paused runs are never taken over: they hold no
  lease and are not `running`.
- Waiting runs: at the same pace, the number of runs paused for a person or for their caller's tool
  outputs is read from the store (one indexed count; all replicas see the same figure) for the metrics.
- Retention: every `runs.purge_interval_s`, finished or abandoned runs past `runs.retention_max_age_s`
  are deleted, then the oldest while the store is over `runs.retention_max_total_bytes`, and expired
  cache entries (`planstack runs purge` does the same once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from executors.errors import RunNotFound
from executors.stores import PurgeReport, RunBusy, RunStore, RunStoreError

if TYPE_CHECKING:
    from executors.runs import RunService

logger = logging.getLogger("planstack.executors.upkeep")


async def count_waiting(service: RunService) -> dict[str, int]:
    """Runs of every tenant paused for approval or for tool outputs, handed to the steering observer."""
    counts = await service.store.paused_counts()
    service.steering.observer.runs_waiting(counts)
    return counts


async def purge(store: RunStore) -> PurgeReport:
    config = store.config
    report = await store.purge(max_age_s=config.retention_max_age_s, max_total_bytes=config.retention_max_total_bytes)
    if report.runs_deleted or report.cache_entries_deleted:
        logger.info("retention purge: %s", report.as_dict())
    return report


async def take_over_orphans(service: RunService) -> list[str]:
    """Acquire and continue runs whose driver is gone; returns the ids taken over."""
    config = service.store.config
    try:
        orphans = await service.store.orphaned_runs(max_takeovers=config.max_takeovers)
    except RunStoreError as exc:
        logger.warning("takeover sweep: %s", exc)
        return []
    taken: list[str] = []
    for tenant, run_id in orphans:
        try:
            if await service.take_over(tenant, run_id):
                taken.append(run_id)
        except (RunBusy, RunNotFound):
            continue  # another replica was faster, or the run was purged
        except RunStoreError as exc:
            logger.warning("takeover of %s: %s", run_id, exc)
            break
    return taken


@contextlib.asynccontextmanager
async def upkeep(service: RunService) -> AsyncIterator[None]:
    """Run the takeover sweep and the retention timer while the block runs (the gateway's lifespan)."""
    config = service.store.config
    loops: list[asyncio.Task[None]] = []
    if config.takeover:
        loops.append(_every(config.takeover_interval_s, lambda: take_over_orphans(service), "takeover"))
    loops.append(_every(service.steering.approvals.expiry_sweep_s, service.expire_overdue, "expiry"))
    loops.append(_every(service.steering.approvals.expiry_sweep_s, service.expire_unanswered, "tool-call expiry"))
    loops.append(_every(service.steering.approvals.expiry_sweep_s, lambda: count_waiting(service), "waiting runs"))
    if config.purge_interval_s > 0:
        loops.append(_every(config.purge_interval_s, lambda: purge(service.store), "purge"))
    try:
        yield
    finally:
        for task in loops:
            task.cancel()
        await asyncio.gather(*loops, return_exceptions=True)


def _every(interval_s: float, job: Callable[[], Awaitable[object]], name: str) -> asyncio.Task[None]:
    async def loop() -> None:
        while True:  # the first pass right away: a restarted gateway picks up its orphans at once
            try:
                await job()
            except Exception:  # a failed pass must not end the loop
                logger.exception("run store %s pass failed", name)
            await asyncio.sleep(interval_s)

    return asyncio.get_running_loop().create_task(loop(), name=f"planstack-{name}")

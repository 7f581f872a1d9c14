"""The driver's side of a lease: who we are, and a heartbeat that keeps our lease alive.

A run is driven by the replica that holds its lease (`executors.stores.base`). While a run executes,
its `LeaseKeeper` renews the lease every `runs.heartbeat_s`. When a renewal is refused (another
replica took the run over: `LeaseLost`), or the store cannot be reached until the lease has expired
anyway, the keeper cancels the drive: the stale driver stops before it can write anything (its
writes would be refused by the fence in any case).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable

from executors.stores import Lease, LeaseLost, RunLeases, RunStoreError

logger = logging.getLogger("planstack.executors.leases")


def default_replica_id() -> str:
    """host-pid-random: unique per process, readable in logs."""
    return f"{socket.gethostname()[:60]}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class LeaseKeeper:
    """Heartbeat of one driven run. `lost` / `store_error` say why it stopped the drive."""

    def __init__(
        self,
        store: RunLeases,
        lease: Lease,
        *,
        ttl_s: float,
        every_s: float,
        on_stop: Callable[[], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.lease = lease
        self.lost = False
        self.store_error: RunStoreError | None = None
        self._ttl_s = ttl_s
        self._every_s = every_s
        self._on_stop = on_stop
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._beat(), name=f"lease-{self.lease.run_id}")

    async def stop(self) -> None:
        """Stop beating; release the lease unless someone else holds it now (a clean hand-over)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if not self.lost:
            try:
                await self.store.release_lease(self.lease)
            except Exception as exc:  # noqa: BLE001 - the lease then simply expires
                logger.warning("run %s: could not release its lease: %s", self.lease.run_id, exc)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self._every_s)
            try:
                self.lease = await self.store.renew_lease(self.lease, self._ttl_s)
            except LeaseLost:
                logger.warning("run %s: taken over by another replica; this driver stops", self.lease.run_id)
                self.lost = True
                self._on_stop()
                return
            except RunStoreError as exc:
                if self._clock() < self.lease.expires_at:
                    continue  # the lease still holds: try again at the next beat
                logger.error("run %s: lease expired while the store was unreachable; stopping", self.lease.run_id)
                self.store_error = exc
                self._on_stop()
                return

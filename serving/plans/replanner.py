"""The executors' `Replanner` as the gateway provides it: the planner, per tenant, within the engine slots."""

from __future__ import annotations

from typing import Any

from contract.plan import Plan
from planner.service import PlannerService
from planner.similarity import embedding_scope
from serving.backpressure import UpstreamSlots
from serving.isolation import CacheSalter


class TenantReplanner:
    """The executors' Replanner: the planner, salted with the run's tenant like any other request and
    admitted to one of that tenant's engine slots; with no client waiting, it may wait `slot_wait_s`
    for one before the run fails with `replan_failed`."""

    def __init__(
        self, planner: PlannerService, salter: CacheSalter, slots: UpstreamSlots, *, slot_wait_s: float = 0.0
    ) -> None:
        self._planner = planner
        self._salter = salter
        self._slots = slots
        self._slot_wait_s = slot_wait_s

    async def replan(
        self,
        request: str,
        failure_summary: str,
        completed: dict[str, str],
        *,
        tenant: str,
        tools: list[dict[str, Any]] | None = None,
    ) -> Plan:
        salt = self._salter.salt(tenant)
        async with self._slots.admitted(tenant, wait_s=self._slot_wait_s):
            with embedding_scope(tenant):
                return await self._planner.replan(
                    request, failure_summary, completed, tenant=tenant, cache_salt=salt, tools=tools
                )

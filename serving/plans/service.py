"""`PlanningGateway`: a tenant's planning request, admitted to an engine slot, salted, counted and
remembered (429 `stored_bytes_quota` once the tenant keeps its stored-bytes cap); also a client-given
plan's validation and the `planner` chat model. The planner's engine errors (`LLMUnavailable`,
`LLMTimeout`), an invalid catalog, an invalid request and a planning failure reach the error funnel as
they are raised: each declares its status (503, 504, 400, 422)."""

from __future__ import annotations

from typing import Any

from contract.plan import Plan
from planner.catalog import ToolCatalog
from planner.service import PlannerService, PlanResult
from planner.similarity import embedding_scope
from serving.auth import Principal
from serving.backpressure import UpstreamSlots
from serving.demonstrations import DemonstrationService
from serving.door import Door
from serving.errors import InvalidRequestError
from serving.isolation import CacheSalter
from serving.metrics import GatewayMetrics
from serving.plans.chat import message_text, plan_completion
from serving.protocol import ChatCompletionRequest
from serving.toolsets.run_tools import RunToolsService


class PlanningGateway:
    def __init__(
        self,
        planner: PlannerService,
        salter: CacheSalter,
        metrics: GatewayMetrics,
        slots: UpstreamSlots,
        demonstrations: DemonstrationService | None = None,
        door: Door | None = None,
        run_tools: RunToolsService | None = None,
    ) -> None:
        self.planner = planner
        self.run_tools = run_tools  # the tenant's toolsets, for `toolsets` in a planning request
        self._salter = salter
        self._metrics = metrics
        self._slots = slots
        self._demonstrations = demonstrations  # keeps each answer under its plan id, for feedback
        self.door = door

    async def plan(
        self, request: str, who: Principal, session: str | None, tools: list[dict[str, Any]] | None = None
    ) -> PlanResult:
        if self._demonstrations is not None:  # the answer is recorded: 429 once the tenant keeps its cap
            await self._demonstrations.check_room(who.tenant)
        salt = self._salter.salt(who.tenant, session)
        # the client's tools checked at the door (bounded, off the loop, once per content) before any slot
        catalog = None if tools is None or self.door is None else await self.door.catalog(tools, tenant=who.tenant)
        async with self._slots.admitted(who.tenant):  # a client waits: no free slot is a 429 at once
            with embedding_scope(who.tenant):  # cached vectors (and their timing) stay the tenant's
                result = await self.planner.plan(
                    request, tenant=who.tenant, cache_salt=salt, tools=catalog if catalog is not None else tools
                )
        self._metrics.plan_cache.labels("hit" if result.path == "cache" else "miss").inc()
        self._metrics.plans.labels(result.path).inc()
        if self._demonstrations is not None:
            await self._demonstrations.remember(who.tenant, request, tools, result)
        return result

    async def catalog_of(
        self, who: Principal, toolsets: list[str] | None, tools: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        """The catalog of a planning request: its `toolsets` (resolved for the tenant) and its own `tools`;
        None for the built-in catalog."""
        if not toolsets:
            return tools
        if self.run_tools is None:
            raise InvalidRequestError("toolsets are not available in this gateway", param="toolsets")
        resolved = await self.run_tools.resolve(who.tenant, toolsets)
        return resolved.catalog + list(tools or [])

    async def check_plan(self, plan: Plan, who: Principal, tools: list[dict[str, Any]] | None = None) -> None:
        """A client-given plan must pass the same validation layers as a planned one, over `tools` (a run's
        own catalog) when given: the catalog checked at the door (once per content and tenant), a large
        plan validated in a door worker on the tenant's share."""
        catalog = self.planner.catalog
        if tools is not None and self.door is not None:
            catalog = await self.door.catalog(tools, tenant=who.tenant)
        elif tools is not None:
            catalog = ToolCatalog.from_openai(tools)
        validator = self.planner.validator(catalog)
        if self.door is None:
            problem = None if (report := validator.validate(plan)).ok else str(report.error)
        else:
            problem = await self.door.plan_problem(validator, plan, tenant=who.tenant)
        if problem is not None:
            raise InvalidRequestError(f"the plan is invalid: {problem}", param="plan")

    async def chat(self, body: ChatCompletionRequest, who: Principal, session: str | None) -> dict[str, Any]:
        """The `planner` model: the last user message is the request; the reply is the plan JSON."""
        user = [m for m in body.messages if m.role == "user"]
        if not user or not (text := message_text(user[-1].content)).strip():
            raise InvalidRequestError("the planner model needs a user message with the request", param="messages")
        tools = await self.catalog_of(who, body.toolsets, body.tools)
        return plan_completion(await self.plan(text, who, session, tools))

"""Demonstrations in and out of each tenant's memory: feedback on plans, bulk import and export, runs.

Every way in validates a plan like any plan before it is stored: the planner's layers over the catalog
the plan is for (schema → DAG → arguments → the business rules of the packs that apply), and every
node's tool and argument names must be in that catalog, so a demonstration can never name a tool the
catalog lacks (400). The catalog is the one the plan was made for (feedback), the line's own or the
import's `tools` (import), or the gateway's registry (runs, and lines without tools).

The checks (`DemonstrationChecks`) are picklable: an import's lines — JSON decoding, each line's
catalog, each plan through the validation layers — are checked in a door worker on the tenant's
share (serving/door), never on the event loop, and storing them (embedding the requests) takes one
of the tenant's embedding slots.

`PlanRecords` keeps what feedback needs later (request, catalog, plan) under the plan id, in the run
store's tenant-scoped cache with a TTL: any replica on the same store accepts feedback on a plan another
one made, and another tenant's plan id is not found (404) because the record is keyed on the tenant.
"""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from contract.demonstrations import Demonstration
from contract.errors import PlanstackBaseError
from executors.stores import RunRecord, RunStore, RunStoreError
from planner.catalog import CatalogError, ToolCatalog, packed_tools
from planner.demos import usable
from planner.packs import DomainPack
from planner.results import PlanResult
from planner.rules import BusinessRules
from planner.service import PlannerService
from planner.validation import PlanValidator
from retrieval.memory import AddReport, NewDemonstration, Origin, TenantMemory
from retrieval.memory_config import LearningConfig
from serving.backpressure import UpstreamSlots
from serving.door import Door
from serving.door.checks import INLINE_PLAN_BYTES
from serving.errors import EngineUnavailableError, InvalidRequestError, NotFoundError
from serving.protocol import MAX_TOOLS, at_most

logger = logging.getLogger("planstack.demonstrations")
PLAN_RECORDS = "plans"
MAX_LIST = 500


class PlanRecord(BaseModel):
    """A planning answer, as feedback on it needs it."""

    model_config = ConfigDict(extra="forbid")

    plan_id: str
    request: str
    tools: list[dict[str, JsonValue]] | None = Field(None, description="The request's catalog; None: the gateway's.")
    plan: dict[str, JsonValue] | None = None
    path: str
    created_at: float


class PlanRecords:
    """Plan records in the run store's tenant cache (namespace `plans`), each for `ttl_s`."""

    def __init__(self, store: RunStore, ttl_s: float) -> None:
        self.store = store
        self.ttl_s = ttl_s

    async def put(self, tenant: str, record: PlanRecord) -> None:
        await self.store.cache_put(PLAN_RECORDS, tenant, record.plan_id, record.model_dump_json(), self.ttl_s)

    async def get(self, tenant: str, plan_id: str) -> PlanRecord | None:
        raw = await self.store.cache_get(PLAN_RECORDS, tenant, plan_id)
        return None if raw is None else PlanRecord.model_validate_json(raw)


class Feedback(BaseModel):
    """POST /v1/plans/{plan_id}/feedback: accept the plan as it is, or send the plan it should have been."""

    model_config = ConfigDict(extra="forbid")

    accepted: bool | None = Field(
        None, description="true: the plan was right and becomes a demonstration; false: nothing is learned."
    )
    corrected_plan: dict[str, JsonValue] | None = Field(
        None, description="The right plan, validated against the catalog the plan was made for."
    )

    @model_validator(mode="after")
    def _one_of(self) -> Feedback:
        if (self.accepted is None) == (self.corrected_plan is None):
            raise ValueError("give exactly one of `accepted` and `corrected_plan`")
        return self


class DemonstrationLine(BaseModel):
    """One line of an import: a solved request (an export's extra fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    request: str = Field(min_length=1)
    plan: dict[str, JsonValue]
    tools: Annotated[list[dict[str, JsonValue]] | None, at_most(MAX_TOOLS)] = Field(None, max_length=MAX_TOOLS)


@dataclass(frozen=True)
class DemonstrationChecks:
    """What a demonstration must pass before it is stored, as plain data (picklable: an import's lines
    are checked in a door worker). `validator` builds what `PlannerService.validator` builds: the
    layers over a catalog plus the business rules of the packs that apply to it."""

    catalog: ToolCatalog  # the gateway's, for lines and runs without their own tools
    packs: tuple[DomainPack, ...]
    today: date
    max_nodes: int
    limits: LearningConfig

    @classmethod
    def of(cls, planner: PlannerService, limits: LearningConfig) -> DemonstrationChecks:
        config = planner.config
        return cls(planner.catalog, tuple(planner.packs), config.effective_today(), config.max_nodes, limits)

    def validator(self, catalog: ToolCatalog) -> PlanValidator:
        rules = [rule for pack in self.packs if pack.applies(catalog) for rule in pack.business_rules()]
        return PlanValidator(catalog, BusinessRules(rules, self.today), max_nodes=self.max_nodes)

    def check(self, request: str, plan: Any, catalog: ToolCatalog, *, param: str = "plan") -> dict[str, Any]:
        """The plan, validated like a planned one over `catalog`, as it is stored; 400 otherwise."""
        if len(request) > self.limits.max_request_chars:
            raise InvalidRequestError(
                f"{param}: the request is longer than {self.limits.max_request_chars} characters", param=param
            )
        report = self.validator(catalog).validate(plan)
        if not report.ok or report.plan is None:
            raise InvalidRequestError(f"{param}: the plan is invalid: {report.error}", param=param)
        checked = report.plan.model_dump(exclude_none=True)
        if not usable([Demonstration(request, checked)], catalog):
            raise InvalidRequestError(f"{param}: the plan names arguments its tools do not have", param=param)
        return checked

    def tool_catalog(self, tools: Any, *, param: str) -> ToolCatalog:
        if tools is None:
            return self.catalog
        if not isinstance(tools, list):
            raise InvalidRequestError(f"{param}: a list of OpenAI-format tools is expected", param=param)
        try:
            return ToolCatalog.from_openai(tools)
        except CatalogError as exc:
            raise InvalidRequestError(f"{param}: {exc}", param=param) from exc

    def one(self, request: str, plan: Any, tools: Any, *, param: str) -> dict[str, Any]:
        """One plan over `tools` (None: the gateway's), as `check` stores it."""
        return self.check(request, plan, self.tool_catalog(tools, param="tools"), param=param)

    def lines(self, text: str, tools: list[dict[str, Any]] | None, origin: Origin) -> list[NewDemonstration]:
        """An import's JSON lines `{"request", "plan", "tools"?}`, every one checked (the first bad line
        raises, naming it); a line `{"tools": [...]}` alone sets the catalog of the lines after it
        (`{"tools": null}`: the gateway's again). A catalog repeated on many lines is checked once."""
        seen: dict[str, ToolCatalog] = {}

        def catalog_of(given: Any, param: str) -> ToolCatalog:
            if not isinstance(given, list):
                return self.tool_catalog(given, param=param)
            digest = packed_tools(given)[1]
            if digest not in seen:
                seen[digest] = self.tool_catalog(given, param=param)
            return seen[digest]

        default = catalog_of(tools, "tools")
        items: list[NewDemonstration] = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            where = f"line {number}"
            data = _json_line(line, where)
            if set(data) == {"tools"}:
                default = catalog_of(data["tools"], f"{where}.tools")
                continue
            if len(items) >= self.limits.max_import_lines:
                raise InvalidRequestError(f"more than {self.limits.max_import_lines} demonstrations in one import")
            try:
                row = DemonstrationLine.model_validate(data)
            except ValidationError as exc:
                first = exc.errors(include_url=False, include_input=False)[0]
                field = ".".join(str(p) for p in first["loc"])[:80]
                raise InvalidRequestError(f"{where}: {field}: {first['msg'][:300]}", param=f"{where}.{field}") from exc
            catalog = default if row.tools is None else catalog_of(row.tools, f"{where}.tools")
            items.append(NewDemonstration(row.request, self.check(row.request, row.plan, catalog, param=where), origin))
        if not items:
            raise InvalidRequestError("no demonstration in the body (JSON lines with `request` and `plan`)")
        return items


class DemonstrationService:
    """The tenant memory behind the API and the CLI (`planstack demos`); plan records once a store is attached."""

    def __init__(
        self,
        memory: TenantMemory,
        planner: PlannerService,
        config: LearningConfig,
        door: Door | None = None,
        slots: UpstreamSlots | None = None,
    ) -> None:
        self.memory = memory
        self.planner = planner
        self.config = config
        self.records: PlanRecords | None = None
        self.door = door
        self.slots = slots  # the tenants' shares of the embedding model (imports embed every request)

    @property
    def checks(self) -> DemonstrationChecks:
        return DemonstrationChecks.of(self.planner, self.config)

    def attach(self, store: RunStore | None) -> None:
        """Plan records live in this run store (the stack attaches it on start, detaches it on close)."""
        self.records = None if store is None else PlanRecords(store, self.config.plan_ttl_s)

    # -- ways in ---------------------------------------------------------------------------------

    async def remember(self, tenant: str, request: str, tools: list[dict[str, Any]] | None, result: PlanResult) -> None:
        """Keep a planning answer for feedback. A store failure costs the feedback, never the plan."""
        if self.records is None:
            return
        plan = result.plan.model_dump(exclude_none=True) if result.plan is not None else None
        record = PlanRecord(
            plan_id=result.plan_id, request=request, tools=tools, plan=plan, path=result.path, created_at=time.time()
        )
        try:
            await self.records.put(tenant, record)
        except (RunStoreError, ValueError) as exc:
            logger.warning("plan %s: not recorded for feedback: %s", result.plan_id, exc)

    async def feedback(self, tenant: str, plan_id: str, body: Feedback) -> dict[str, Any]:
        if self.records is None:
            raise EngineUnavailableError("feedback is not available yet (the gateway is starting)", retry_after_s=1)
        record = await self.records.get(tenant, plan_id)
        if record is None:  # unknown, expired, or another tenant's
            raise NotFoundError(f"plan {plan_id!r} not found", code="plan_not_found")
        if body.accepted is False:
            return {"plan_id": plan_id, "status": "rejected", "demonstration": None, "evicted": []}
        plan = body.corrected_plan if body.corrected_plan is not None else record.plan
        if plan is None:
            raise InvalidRequestError("there is no plan to accept: send `corrected_plan`", param="accepted")
        param = "corrected_plan" if body.corrected_plan is not None else "accepted"
        checked = await self._checked(tenant, record.request, plan, record.tools, param=param)
        report = await self._add(tenant, [NewDemonstration(record.request, checked, "feedback")])
        added = report.added[0]
        return {
            "plan_id": plan_id,
            "status": added.status,
            "demonstration": added.demonstration.as_dict(),
            "evicted": report.evicted,
        }

    async def import_jsonl(
        self, tenant: str, text: str, *, tools: list[dict[str, Any]] | None = None, origin: Origin = "import"
    ) -> dict[str, Any]:
        """JSON lines `{"request", "plan", "tools"?}` (`DemonstrationChecks.lines`). All lines are checked
        first, in a door worker when the gateway has one: one bad line stores nothing (400 naming it)."""
        checks = self.checks
        if self.door is None:
            items = checks.lines(text, tools, origin)
        else:
            small = len(text) <= INLINE_PLAN_BYTES and "pattern" not in text and tools is None
            items = await self.door.run(tenant, checks.lines, text, tools, origin, inline=small)
        report = await self._add(tenant, items)
        counts = {status: sum(1 for a in report.added if a.status == status) for status in ("added", "updated")}
        return {
            "object": "demonstrations.import",
            **counts,
            "duplicates": sum(1 for a in report.added if a.status == "duplicate"),
            "ids": [a.demonstration.id for a in report.added],
            "evicted": report.evicted,
        }

    async def learn_from_run(self, record: RunRecord) -> None:
        """A run that succeeded without a re-plan: its request and plan, when its tenant learns from runs.
        (After a re-plan the last plan covers only the remaining work, so it is not a whole solution.)"""
        if not self.config.learns_from_runs(record.tenant) or record.replans > 0 or record.status != "succeeded":
            return
        try:
            plan = await self._checked(record.tenant, record.request, record.plan.model_dump(exclude_none=True), None)
            await self._add(record.tenant, [NewDemonstration(record.request, plan, "run")])
        except (PlanstackBaseError, ValueError, OSError) as exc:
            logger.warning("run %s: not learned: %s", record.run_id, exc)

    # -- ways out --------------------------------------------------------------------------------

    async def listing(self, tenant: str, *, limit: int = 100, offset: int = 0) -> dict[str, Any]:
        limit = max(1, min(limit, MAX_LIST))
        page = await asyncio.to_thread(self.memory.demonstrations, tenant, limit=limit + 1, offset=max(0, offset))
        usage = await asyncio.to_thread(self.memory.usage, tenant)
        return {
            "object": "list",
            "data": [d.as_dict() for d in page[:limit]],
            "has_more": len(page) > limit,
            "usage": usage.as_dict(),
        }

    async def export_jsonl(self, tenant: str) -> str:
        """Every demonstration of the tenant as JSON lines that `import_jsonl` reads back."""
        stored = await asyncio.to_thread(self.memory.demonstrations, tenant)
        rows = ({"request": d.request, "plan": d.plan, "id": d.id, "origin": d.origin} for d in stored)
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)

    async def delete(self, tenant: str, demo_id: str) -> dict[str, Any]:
        if not await asyncio.to_thread(self.memory.delete, tenant, demo_id):
            raise NotFoundError(f"demonstration {demo_id!r} not found", code="demonstration_not_found")
        return {"id": demo_id, "object": "demonstration", "deleted": True}

    # -- checks ----------------------------------------------------------------------------------

    def check(self, request: str, plan: Any, catalog: ToolCatalog, *, param: str = "plan") -> dict[str, Any]:
        """The plan, validated like a planned one over `catalog`, as it is stored; 400 otherwise."""
        return self.checks.check(request, plan, catalog, param=param)

    async def _checked(
        self, tenant: str, request: str, plan: Any, tools: Sequence[Any] | None, *, param: str = "plan"
    ) -> dict[str, Any]:
        """`DemonstrationChecks.one`, in a door worker unless the plan and its tools are small."""
        checks = self.checks
        if self.door is None:
            return checks.one(request, plan, tools, param=param)
        packed = pickle.dumps((plan, tools), protocol=5)
        small = len(packed) <= INLINE_PLAN_BYTES and b"pattern" not in packed
        return await self.door.run(tenant, _check_one, checks, request, plan, tools, param, inline=small)

    async def _add(self, tenant: str, items: list[NewDemonstration]) -> AddReport:
        """Store a batch; one over a bound of the memory refuses it whole (`InvalidDemonstrationError`, 400)."""
        if self.slots is None:
            return await asyncio.to_thread(self.memory.add_many, tenant, items)
        async with self.slots.held(tenant):  # embedding the requests takes one of the tenant's slots
            return await asyncio.to_thread(self.memory.add_many, tenant, items)


def _check_one(checks: DemonstrationChecks, request: str, plan: Any, tools: Any, param: str) -> dict[str, Any]:
    return checks.one(request, plan, tools, param=param)


def _json_line(line: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise InvalidRequestError(f"{where}: not valid JSON", param=where, code="invalid_json") from exc
    if not isinstance(data, dict):
        raise InvalidRequestError(f"{where}: a JSON object is expected", param=where)
    return data

"""Plans and runs behind the gateway: planner and executors errors become typed gateway errors here.

`PlanningGateway` serves `POST /v1/plans` and the virtual `planner` chat model (the plan JSON as the
message content); `RunGateway` serves `/v1/runs`. Both are tenant-scoped: the tenant comes from the
API key, the cache salt from the server's isolation scope, never from the client. A planning
request is admitted to one of its tenant's engine slots before the planner starts (429 when none is
free); the planner's engine errors (`LLMUnavailable`, `LLMTimeout`) reach the error funnel as they
are: 503, 504.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from executors.errors import RunNotFound
from executors.quotas import PlanTooLarge
from executors.runs import RunService, RunView
from executors.stores import QuotaExceeded, RunBusy, RunEvent, RunStoreError
from planner.catalog import CatalogError
from planner.plan import Plan
from planner.service import PlannerService, PlanningFailed, PlanResult
from serving.auth import Principal
from serving.backpressure import UpstreamSlots
from serving.demonstrations import DemonstrationService
from serving.errors import (
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PlanstackError,
    RateLimitError,
    StoreUnavailableError,
)
from serving.followers import FollowerSlot, FollowerSlots
from serving.isolation import CacheSalter
from serving.metrics import GatewayMetrics
from serving.protocol import ChatCompletionRequest

PLANNER_MODEL = "planner"
RUN_ID_PATTERN = r"^run_[0-9a-f]{8,40}$"


class PlanningFailedError(PlanstackError):
    status = 422
    type = "invalid_request_error"
    code = "planning_failed"


class RunBusyError(PlanstackError):
    """Resume of a run that a live driver (this gateway or another replica) is executing."""

    status = 409
    type = "invalid_request_error"
    code = "run_busy"


class RunQuotaError(RateLimitError):
    code = "run_quota_exceeded"


class PlanTooLargeError(PayloadTooLargeError):
    code = "plan_too_large"


class PlanCreate(BaseModel):
    """POST /v1/plans."""

    model_config = ConfigDict(extra="forbid")

    request: str = Field(min_length=1, max_length=4000, description="What the user wants, in natural language.")
    tools: list[dict[str, JsonValue]] | None = Field(
        None, max_length=128, description="Plan over exactly these tools (OpenAI `tools` format)."
    )


class RunCreate(BaseModel):
    """POST /v1/runs: a request to plan and execute, or a given plan to execute."""

    model_config = ConfigDict(extra="forbid")

    request: str = Field(min_length=1, max_length=4000)
    plan: Plan | None = Field(None, description="Execute this plan instead of planning the request.")
    wait: bool = Field(False, description="Answer when the run has finished instead of at once (202).")


def store_unavailable(exc: RunStoreError) -> StoreUnavailableError:
    """A run-store failure as the gateway's 503 (the store's path and internals stay in the log)."""
    return StoreUnavailableError(f"the run store is unavailable: {exc.message}", retry_after_s=5)


@contextmanager
def run_errors(run_id: str | None = None) -> Iterator[None]:
    """The executors' typed run errors as the gateway's (the one place they are mapped)."""
    try:
        yield
    except RunNotFound as exc:
        raise NotFoundError(f"run {run_id!r} not found", code="run_not_found") from exc
    except RunBusy as exc:
        retry = None if exc.expires_in_s is None else max(1, int(exc.expires_in_s + 0.999))
        raise RunBusyError(exc.message, hint=exc.hint, retry_after_s=retry) from exc
    except PlanTooLarge as exc:
        raise PlanTooLargeError(exc.message, param="plan") from exc
    except QuotaExceeded as exc:
        raise RunQuotaError(exc.message, hint=exc.hint, code=exc.type, retry_after_s=5) from exc
    except RunStoreError as exc:
        raise store_unavailable(exc) from exc


class PlanningGateway:
    def __init__(
        self,
        planner: PlannerService,
        salter: CacheSalter,
        metrics: GatewayMetrics,
        slots: UpstreamSlots,
        demonstrations: DemonstrationService | None = None,
    ) -> None:
        self.planner = planner
        self._salter = salter
        self._metrics = metrics
        self._slots = slots
        self._demonstrations = demonstrations  # keeps each answer under its plan id, for feedback

    async def plan(
        self, request: str, who: Principal, session: str | None, tools: list[dict[str, Any]] | None = None
    ) -> PlanResult:
        salt = self._salter.salt(who.tenant, session)
        try:
            async with self._slots.admitted(who.tenant):  # a client waits: no free slot is a 429 at once
                result = await self.planner.plan(request, tenant=who.tenant, cache_salt=salt, tools=tools)
        except PlanningFailed as exc:
            raise PlanningFailedError(f"no valid plan could be produced: {exc.reason}") from exc
        except CatalogError as exc:  # a ValueError too: keep it before the generic case
            raise InvalidRequestError(f"invalid tools: {exc}", param="tools") from exc
        except ValueError as exc:  # empty or over-long request
            raise InvalidRequestError(str(exc), param="request") from exc
        self._metrics.plan_cache.labels("hit" if result.path == "cache" else "miss").inc()
        self._metrics.plans.labels(result.path).inc()
        if self._demonstrations is not None:
            await self._demonstrations.remember(who.tenant, request, tools, result)
        return result

    def check_plan(self, plan: Plan) -> None:
        """A client-given plan must pass the same validation layers as a planned one."""
        report = self.planner.validator(self.planner.catalog).validate(plan)
        if not report.ok:
            raise InvalidRequestError(f"the plan is invalid: {report.error}", param="plan")

    async def chat(self, body: ChatCompletionRequest, who: Principal, session: str | None) -> dict[str, Any]:
        """The `planner` model: the last user message is the request; the reply is the plan JSON."""
        user = [m for m in body.messages if m.role == "user"]
        if not user or not (text := _text(user[-1].content)).strip():
            raise InvalidRequestError("the planner model needs a user message with the request", param="messages")
        result = await self.plan(text, who, session, body.tools)
        plan = result.plan.model_dump(exclude_none=True) if result.plan is not None else {"nodes": []}
        content = json.dumps(plan, separators=(",", ":"))
        return {
            "id": "chatcmpl-" + uuid.uuid4().hex[:24],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": PLANNER_MODEL,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": result.usage,
            "planstack": {
                "plan_id": result.plan_id,
                "path": result.path,
                "fallback_reason": result.fallback_reason,
                "reason": result.reason,
            },
        }


async def as_sse(reply: dict[str, Any]) -> AsyncIterator[bytes]:
    """A whole chat completion as one streamed chunk (the plan exists only once it is validated)."""
    message = reply["choices"][0]["message"]
    chunk = {
        "id": reply["id"],
        "object": "chat.completion.chunk",
        "created": reply["created"],
        "model": reply["model"],
        "choices": [{"index": 0, "delta": message, "finish_reason": "stop"}],
    }
    yield f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.text for part in content)
    return ""


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

    async def replan(self, request: str, failure_summary: str, completed: dict[str, str], *, tenant: str) -> Plan:
        salt = self._salter.salt(tenant)
        async with self._slots.admitted(tenant, wait_s=self._slot_wait_s):
            return await self._planner.replan(request, failure_summary, completed, tenant=tenant, cache_salt=salt)


class RunGateway:
    def __init__(self, runs: RunService, planning: PlanningGateway, followers: FollowerSlots | None = None) -> None:
        self.runs = runs
        self._planning = planning
        config = runs.runs_config
        self.followers = followers or FollowerSlots(
            per_tenant=config.max_followers_per_tenant, total=config.max_followers_total
        )

    async def create(self, body: RunCreate, who: Principal, session: str | None) -> tuple[RunView, dict[str, Any]]:
        planned: dict[str, Any] = {"path": "given"}
        plan: Plan | None = body.plan
        if body.plan is None:
            result = await self._planning.plan(body.request, who, session)
            plan = result.plan
            planned = {
                "plan_id": result.plan_id,
                "path": result.path,
                "fallback_reason": result.fallback_reason,
                "reason": result.reason,
            }
        else:
            self._planning.check_plan(body.plan)
        with run_errors():
            if plan is None:  # no tool fits: the run ends at once as `no_plan`, with the reason
                run_id = await self.runs.record_no_plan(who.tenant, body.request, planned.get("reason") or "no plan")
                return await self.get(who, run_id), planned
            run_id = await self.runs.start(who.tenant, body.request, plan)
            view = await self.runs.wait(who.tenant, run_id) if body.wait else await self.get(who, run_id)
        return view, planned

    async def get(self, who: Principal, run_id: str) -> RunView:
        with run_errors(run_id):
            view = await self.runs.get(who.tenant, run_id)
        if view is None:  # another tenant's run does not exist for this one
            raise NotFoundError(f"run {run_id!r} not found", code="run_not_found")
        return view

    async def resume(self, who: Principal, run_id: str) -> RunView:
        with run_errors(run_id):
            await self.runs.resume(who.tenant, run_id)
        return await self.get(who, run_id)

    async def follow(
        self, who: Principal, run_id: str, *, after: int = 0
    ) -> tuple[FollowerSlot, AsyncIterator[RunEvent]]:
        """A follower slot (429 when the tenant or the gateway has too many) and the run's events;
        404 before anything streams."""
        await self.get(who, run_id)
        slot = self.followers.acquire(who.tenant)
        return slot, self.runs.events(who.tenant, run_id, after=after)

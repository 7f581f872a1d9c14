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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from contract.plan import Plan
from executors.errors import RunNotFound
from executors.quotas import PlanTooLarge
from executors.runs import RunService, RunView
from executors.stores import (
    EscalationState,
    QuotaExceeded,
    RunBusy,
    RunEvent,
    RunRecord,
    RunStatus,
    RunStoreError,
)
from executors.webhooks import WebhookRefused, WebhooksConfig, check_webhook_url
from planner.catalog import CatalogError
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
from serving.redaction import describe_store_failure

PLANNER_MODEL = "planner"
RunListStatus = Literal["running", "succeeded", "failed", "interrupted", "awaiting_approval", "escalated"]
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
    webhook_url: str | None = Field(
        None, max_length=2048, description="POST run events here (its host must be in webhooks.allowed_hosts)."
    )


def store_unavailable(exc: RunStoreError) -> StoreUnavailableError:
    """A run-store failure as the gateway's 503: a typed phrase, never SQLite's own message or the
    store's path (both stay in the log)."""
    return StoreUnavailableError(f"the run store is unavailable: {describe_store_failure(exc)}", retry_after_s=5)


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
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": result.usage,
            "planstack": {
                "plan_id": result.plan_id,
                "path": result.path,
                "fallback_reason": result.fallback_reason,
                "reason": result.reason,
                "missing": result.missing,  # path "needs_input": what the user must give (planner/results.py)
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


def run_summary(record: RunRecord) -> dict[str, Any]:
    """A run as the run list shows it (no plan, no results)."""
    return {
        "run_id": record.run_id,
        "request": record.request,
        "status": record.effective_status,
        "round": record.round,
        "nodes": len(record.plan.nodes),
        "error_type": (record.error or {}).get("type"),
        "escalation": (record.escalation or {}).get("state"),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }


def planner_record(result: PlanResult, model: str | None) -> dict[str, Any]:
    """What a run keeps of how its plan was made: the path and each attempt, bounded (no raw output)."""
    attempts = [
        {key: value for key, value in attempt.as_dict().items() if key != "raw_text"} | {"chars": len(attempt.raw_text)}
        for attempt in result.attempts[:8]
    ]
    return {
        "path": result.path,
        "model": model,
        "fallback_reason": None if result.fallback_reason is None else result.fallback_reason[:500],
        "attempts": attempts,
        "timings": result.timings,
        "usage": result.usage,
    }


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
    def __init__(
        self,
        runs: RunService,
        planning: PlanningGateway,
        followers: FollowerSlots | None = None,
        webhooks: WebhooksConfig | None = None,
    ) -> None:
        self.runs = runs
        self._planning = planning
        self._webhooks = webhooks or WebhooksConfig()
        config = runs.runs_config
        self.followers = followers or FollowerSlots(
            per_tenant=config.max_followers_per_tenant, total=config.max_followers_total
        )

    async def create(self, body: RunCreate, who: Principal, session: str | None) -> tuple[RunView, dict[str, Any]]:
        planned: dict[str, Any] = {"path": "given"}
        webhook = None if body.webhook_url is None else self._checked_webhook(body.webhook_url)
        recorded: dict[str, Any] = planned
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
            recorded = planner_record(result, getattr(self._planning.planner.llm, "model", None))
        else:
            self._planning.check_plan(body.plan)
        with run_errors():
            if plan is None:  # no tool fits: the run ends at once as `no_plan`, with the reason
                reason = planned.get("reason") or "no plan"
                run_id = await self.runs.record_no_plan(who.tenant, body.request, reason, planner=recorded)
                return await self.get(who, run_id), planned
            run_id = await self.runs.start(who.tenant, body.request, plan, webhook_url=webhook, planner=recorded)
            view = await self.runs.wait(who.tenant, run_id) if body.wait else await self.get(who, run_id)
        return view, planned

    async def get(self, who: Principal, run_id: str) -> RunView:
        with run_errors(run_id):
            view = await self.runs.get(who.tenant, run_id)
        if view is None:  # another tenant's run does not exist for this one
            raise NotFoundError(f"run {run_id!r} not found", code="run_not_found")
        return view

    def _checked_webhook(self, url: str) -> str:
        try:
            return check_webhook_url(url, self._webhooks)
        except WebhookRefused as exc:
            raise InvalidRequestError(str(exc), param="webhook_url") from exc

    async def page(
        self, who: Principal, *, status: RunListStatus | None, limit: int, after: str | None
    ) -> tuple[list[RunRecord], str | None]:
        """The tenant's runs, newest first; `escalated` = failed with an open escalation. The cursor of
        the next page is the last run id of this one (None at the end)."""
        escalation: EscalationState | None = "open" if status == "escalated" else None
        stored: RunStatus | None = None if status is None or status == "escalated" else status
        with run_errors():
            page = await self.runs.store.list_runs(
                who.tenant, limit=limit + 1, status=stored, escalation=escalation, before=after
            )
        return page[:limit], page[limit - 1].run_id if len(page) > limit else None

    async def plans(self, who: Principal, run_id: str) -> list[tuple[int, Plan]]:
        with run_errors(run_id):
            return await self.runs.store.plans(who.tenant, run_id)

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

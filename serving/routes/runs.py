"""/v1/runs: plan + execute (or execute a given plan), poll a run, follow it as SSE, resume it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.responses import JSONResponse

from serving.auth import Principal
from serving.dependencies import principal, read_model, services
from serving.followers import FollowerStream
from serving.openapi import error_responses, json_body
from serving.routes.chat import SESSION_HEADER
from serving.runs.protocol import RUN_ID_PATTERN, RunCreate, RunListStatus, run_summary
from serving.runs.sse import event_stream

router = APIRouter()
RunId = Path(pattern=RUN_ID_PATTERN, max_length=48)


@router.post(
    "/v1/runs",
    **json_body(
        RunCreate,
        extra_errors={
            413: "Body over `gateway.max_body_bytes`, or plan over `runs.max_plan_*` (`plan_too_large`)",
            422: "No valid plan could be produced",
            429: "A per-tenant run quota (`too_many_active_runs`, `stored_runs_quota`, `stored_bytes_quota`)",
        },
    ),
)
async def create_run(request: Request, who: Principal = Depends(principal)) -> JSONResponse:
    svc = services(request)
    body = await read_model(request, RunCreate, who)
    view, planned = await svc.runs().create(body, who, request.headers.get(SESSION_HEADER))
    payload = {**view.model_dump(mode="json"), "planner": planned}
    return JSONResponse(payload, status_code=200 if body.wait else 202)


@router.get("/v1/runs", responses=error_responses(400, 401, 503))
async def list_runs(
    request: Request,
    status: RunListStatus | None = Query(None, description="Only runs in this state (`escalated`: open escalation)"),
    limit: int = Query(20, ge=1, le=100),
    after: str | None = Query(None, pattern=RUN_ID_PATTERN, max_length=48, description="The previous page's last id"),
    who: Principal = Depends(principal),
) -> dict[str, Any]:
    """The tenant's runs, newest first, paged (`next_after` is the cursor of the next page)."""
    page, next_after = await services(request).runs().page(who, status=status, limit=limit, after=after)
    items = [run_summary(record) for record in page]
    return {"object": "list", "data": items, "next_after": next_after}


@router.get("/v1/runs/{run_id}", responses=error_responses(401, 404, 503))
async def get_run(request: Request, run_id: str = RunId, who: Principal = Depends(principal)) -> dict[str, Any]:
    view = await services(request).runs().get(who, run_id)
    return view.model_dump(mode="json")


@router.get("/v1/runs/{run_id}/plans", responses=error_responses(401, 404, 503))
async def run_plans(request: Request, run_id: str = RunId, who: Principal = Depends(principal)) -> dict[str, Any]:
    """The plan of every round of the run (round 0, then each re-plan)."""
    plans = await services(request).runs().plans(who, run_id)
    return {
        "object": "list",
        "data": [{"round": round_, "plan": plan.model_dump(mode="json")} for round_, plan in plans],
    }


@router.post(
    "/v1/runs/{run_id}/resume",
    responses=error_responses(401, 404, 503, extra={409: "A live driver executes the run (`Retry-After`)"}),
)
async def resume_run(request: Request, run_id: str = RunId, who: Principal = Depends(principal)) -> dict[str, Any]:
    view = await services(request).runs().resume(who, run_id)
    return view.model_dump(mode="json")


@router.get(
    "/v1/runs/{run_id}/events",
    responses=error_responses(401, 404, 503, extra={429: "Too many event streams for this tenant or gateway"}),
)
async def run_events(
    request: Request,
    run_id: str = RunId,
    last_event_id: int = Header(0, ge=0, le=1_000_000_000, alias="Last-Event-ID"),
    who: Principal = Depends(principal),
) -> FollowerStream:
    """Replay then follow; a reconnecting client sends `Last-Event-ID` (the SSE `id`) to skip what it saw."""
    slot, events = await services(request).runs().follow(who, run_id, after=last_event_id)
    return FollowerStream(
        event_stream(events), slot, media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )

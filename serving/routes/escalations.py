"""/v1/escalations: the tenant's queue of runs that ended for good; resume, re-plan or close one."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request

from serving.auth import Principal
from serving.dependencies import principal, read_model, services
from serving.openapi import error_responses, json_body
from serving.routes.runs import RunId
from serving.runs.protocol import RUN_ID_PATTERN
from serving.steering import EscalationAction

router = APIRouter()
_CONFLICT = {409: "The run has no open escalation (`not_escalated`), or a live driver holds it (`run_busy`)"}


async def _body(request: Request, who: Principal) -> EscalationAction:
    return await read_model(request, EscalationAction, who, optional=True)


@router.get("/v1/escalations", responses=error_responses(400, 401, 503))
async def list_escalations(
    request: Request,
    limit: int = Query(20, ge=1, le=100),
    after: str | None = Query(None, pattern=RUN_ID_PATTERN, max_length=48, description="The previous page's last id"),
    who: Principal = Depends(principal),
) -> dict[str, Any]:
    return await services(request).steering().queue(who, limit=limit, after=after)


@router.post("/v1/escalations/{run_id}/{action}", **json_body(EscalationAction, extra_errors=_CONFLICT))
async def handle_escalation(
    request: Request,
    action: Literal["resume", "replan", "close"],
    run_id: str = RunId,
    who: Principal = Depends(principal),
) -> dict[str, Any]:
    """`resume` runs the same plan again (a new round, fresh budgets), `replan` runs the edited `plan`,
    `close` files it with a `note`."""
    steering = services(request).steering()
    body = await _body(request, who)
    if action == "close":
        return await steering.close(who, run_id, body)
    view = await steering.reopen(who, run_id, action, body)
    return view.model_dump(mode="json")

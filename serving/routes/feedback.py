"""POST /v1/plans/{plan_id}/feedback: accept a plan or correct it; either way it joins the tenant's memory."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Request

from planner.results import PLAN_ID_PATTERN
from serving.auth import Principal
from serving.demonstrations import Feedback
from serving.dependencies import principal, read_model, services
from serving.openapi import json_body

router = APIRouter()
PlanId = Path(pattern=PLAN_ID_PATTERN, max_length=40)


@router.post(
    "/v1/plans/{plan_id}/feedback",
    **json_body(Feedback, extra_errors={404: "Unknown or expired plan id, or another tenant's (`plan_not_found`)"}),
)
async def plan_feedback(request: Request, plan_id: str = PlanId, who: Principal = Depends(principal)) -> dict[str, Any]:
    svc = services(request)
    body = await read_model(request, Feedback, who)
    return await svc.memory().feedback(who.tenant, plan_id, body)

"""POST /v1/plans: request text (+ optional OpenAI-format tools) → plan, validation report, timings, usage."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from serving.auth import Principal
from serving.dependencies import principal, read_model, services
from serving.openapi import json_body
from serving.plans.protocol import PlanCreate
from serving.routes.chat import SESSION_HEADER

router = APIRouter()


@router.post("/v1/plans", **json_body(PlanCreate, extra_errors={422: "No valid plan could be produced"}))
async def create_plan(request: Request, who: Principal = Depends(principal)) -> dict[str, Any]:
    svc = services(request)
    body = await read_model(request, PlanCreate, who)
    planning = svc.planning()
    tools = await planning.catalog_of(who, body.toolsets, body.tools)
    result = await planning.plan(body.request, who, request.headers.get(SESSION_HEADER), tools)
    return result.as_dict()

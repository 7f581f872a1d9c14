"""GET /v1/models."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from serving.auth import Principal
from serving.dependencies import principal, services
from serving.openapi import error_responses
from serving.plans.protocol import PLANNER_MODEL

router = APIRouter()


@router.get("/v1/models", responses=error_responses(401))
async def list_models(request: Request, _: Principal = Depends(principal)) -> dict[str, Any]:
    svc = services(request)
    names = [svc.engine_model] + ([PLANNER_MODEL] if svc.planning_gateway is not None else [])
    names += [svc.embeddings.model_id] if svc.embeddings is not None else []
    created = int(request.app.state.started_at)
    return {
        "object": "list",
        "data": [{"id": name, "object": "model", "created": created, "owned_by": "planstack"} for name in names],
    }

"""POST /v1/runs/{id}/approve and /reject: decide on a run awaiting approval (thin: see serving/steering.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from serving.auth import Principal
from serving.dependencies import principal, read_model, services
from serving.openapi import json_body
from serving.routes.runs import RunId
from serving.steering import DecisionCreate

router = APIRouter()
_CONFLICT = {409: "Not awaiting approval (`not_awaiting_approval`), or the request expired (`approval_expired`)"}


async def _body(request: Request, who: Principal) -> DecisionCreate:
    return await read_model(request, DecisionCreate, who, optional=True)


@router.post("/v1/runs/{run_id}/approve", **json_body(DecisionCreate, extra_errors=_CONFLICT))
async def approve_run(request: Request, run_id: str = RunId, who: Principal = Depends(principal)) -> dict[str, Any]:
    """Approve what the run waits for (its held calls or its plan); the run continues at once."""
    return await services(request).steering().decide(who, run_id, "approved", await _body(request, who))


@router.post("/v1/runs/{run_id}/reject", **json_body(DecisionCreate, extra_errors=_CONFLICT))
async def reject_run(request: Request, run_id: str = RunId, who: Principal = Depends(principal)) -> dict[str, Any]:
    """Reject it: the held calls never run; the run stops (or re-plans with the reason when `replan`)."""
    return await services(request).steering().decide(who, run_id, "rejected", await _body(request, who))

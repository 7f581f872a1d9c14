"""POST /v1/runs/{id}/tool_outputs: answer a call the run handed to its caller (thin: serving/runs/tool_outputs.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from serving.auth import Principal
from serving.dependencies import principal, read_model, services
from serving.openapi import json_body
from serving.routes.runs import RunId
from serving.runs.protocol import ToolOutputCreate

router = APIRouter()
_ERRORS = {
    409: "The run does not wait for this node's call (`not_awaiting_output`), or it was answered (`already_answered`)"
}


@router.post("/v1/runs/{run_id}/tool_outputs", **json_body(ToolOutputCreate, extra_errors=_ERRORS))
async def submit_tool_output(
    request: Request, run_id: str = RunId, who: Principal = Depends(principal)
) -> dict[str, Any]:
    """The output (or error) of one call the run waits for; the run continues at once."""
    svc = services(request)
    body = await read_model(request, ToolOutputCreate, who)
    return await svc.tool_outputs().answer(who, run_id, body)

"""POST /v1/responses: validate, authenticate, delegate to ResponsesService (built on ChatService)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from serving.auth import Principal
from serving.dependencies import principal, read_model, services
from serving.openapi import json_body
from serving.responses.protocol import ResponsesRequest
from serving.responses.service import ResponsesService
from serving.routes.chat import SESSION_HEADER, SSE_HEADERS, TOOL_CALL_FAILED

router = APIRouter()


@router.post("/v1/responses", **json_body(ResponsesRequest, extra_errors=TOOL_CALL_FAILED))
async def create_response(request: Request, who: Principal = Depends(principal)) -> Response:
    svc = services(request)
    body = await read_model(request, ResponsesRequest, who)
    responses = ResponsesService(svc.chat)
    session = request.headers.get(SESSION_HEADER)
    if body.stream:
        events = await responses.stream(body, who, session)
        return StreamingResponse(events, media_type="text/event-stream", headers=SSE_HEADERS)
    return JSONResponse(await responses.create(body, who, session))

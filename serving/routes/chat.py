"""POST /v1/chat/completions: validate, authenticate, delegate to ChatService (or a virtual model)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from serving.auth import Principal
from serving.dependencies import parse_model, principal, read_json, services
from serving.planning import PLANNER_MODEL, as_sse
from serving.protocol import ChatCompletionRequest

router = APIRouter()

SESSION_HEADER = "x-planstack-session"


@router.post("/v1/chat/completions")
async def chat_completions(request: Request, who: Principal = Depends(principal)) -> Response:
    svc = services(request)
    body = parse_model(ChatCompletionRequest, await read_json(request, svc.settings.gateway.max_body_bytes))
    if body.model == PLANNER_MODEL:  # answered by planstack itself: the plan JSON as the content
        svc.chat.check_limits(body)
        reply = await svc.planning().chat(body, who, request.headers.get(SESSION_HEADER))
        if body.stream:
            return StreamingResponse(as_sse(reply), media_type="text/event-stream")
        return JSONResponse(reply)
    engine_body = await svc.chat.prepare(body, who, request.headers.get(SESSION_HEADER))
    if not body.stream:
        return Response(await svc.chat.complete(engine_body, tenant=who.tenant), media_type="application/json")
    first, rest = await svc.chat.first_chunk(engine_body, tenant=who.tenant)

    async def relay() -> AsyncIterator[bytes]:
        yield first
        async for chunk in rest:
            yield chunk

    return StreamingResponse(relay(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

"""POST /v1/chat/completions: validate, authenticate, delegate to ChatService (or a virtual model)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from serving.auth import Principal
from serving.chat import ChatService, ToolCallTurn
from serving.dependencies import principal, read_model, services
from serving.errors import InvalidRequestError
from serving.openapi import json_body
from serving.plans.chat import as_sse
from serving.plans.protocol import PLANNER_MODEL
from serving.protocol import ChatCompletionRequest
from serving.toolcalls.shaping import chat_chunks, chat_completion

router = APIRouter()

SESSION_HEADER = "x-planstack-session"
SSE_HEADERS = {"Cache-Control": "no-cache"}


async def relay(chat: ChatService, body: dict[str, Any], path: str, *, tenant: str) -> Response:
    """Stream an engine answer for `tenant`: errors before its first bytes are a plain error response."""
    first, rest = await chat.first_chunk(body, path, tenant=tenant)

    async def chunks() -> AsyncIterator[bytes]:
        yield first
        async for chunk in rest:
            yield chunk

    return StreamingResponse(chunks(), media_type="text/event-stream", headers=SSE_HEADERS)


TOOL_CALL_FAILED = {422: "No valid tool call was decoded"}


@router.post("/v1/chat/completions", **json_body(ChatCompletionRequest, extra_errors=TOOL_CALL_FAILED))
async def chat_completions(request: Request, who: Principal = Depends(principal)) -> Response:
    svc = services(request)
    body = await read_model(request, ChatCompletionRequest, who)
    if body.model == PLANNER_MODEL:  # answered by planstack itself: the plan JSON as the content
        svc.chat.check_limits(body)
        reply = await svc.planning().chat(body, who, request.headers.get(SESSION_HEADER))
        if body.stream:
            return StreamingResponse(as_sse(reply), media_type="text/event-stream")
        return JSONResponse(reply)
    if body.toolsets is not None:
        raise InvalidRequestError("`toolsets` is for the planner model", param="toolsets")
    turn = await svc.chat.turn(body, who, request.headers.get(SESSION_HEADER))
    if isinstance(turn, ToolCallTurn):
        if body.stream:
            usage = body.stream_options is not None and bool(body.stream_options.include_usage)
            return StreamingResponse(
                chat_chunks(turn.turn, body.model, include_usage=usage), media_type="text/event-stream",
                headers=SSE_HEADERS,
            )  # fmt: skip
        return JSONResponse(chat_completion(turn.turn, body.model))
    if not body.stream:
        return Response(await svc.chat.complete(turn.body, tenant=who.tenant), media_type="application/json")
    return await relay(svc.chat, turn.body, "/v1/chat/completions", tenant=who.tenant)

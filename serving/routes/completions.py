"""POST /v1/completions (legacy text completions): the chat rules, then relayed to the engine."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from serving.auth import Principal
from serving.chat import COMPLETIONS_PATH
from serving.dependencies import principal, read_model, services
from serving.openapi import json_body
from serving.protocol import CompletionRequest
from serving.routes.chat import SESSION_HEADER, relay

router = APIRouter()


@router.post("/v1/completions", **json_body(CompletionRequest))
async def completions(request: Request, who: Principal = Depends(principal)) -> Response:
    svc = services(request)
    body = await read_model(request, CompletionRequest, who)
    engine_body = svc.chat.check_completion(body, who, request.headers.get(SESSION_HEADER))
    if not body.stream:
        reply = await svc.chat.complete(engine_body, COMPLETIONS_PATH, tenant=who.tenant)
        return Response(reply, media_type="application/json")
    return await relay(svc.chat, engine_body, COMPLETIONS_PATH, tenant=who.tenant)

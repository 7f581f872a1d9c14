"""POST /v1/embeddings: validate, authenticate, delegate to EmbeddingService (off the event loop)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from serving.auth import Principal
from serving.dependencies import principal, read_model, services
from serving.errors import NotFoundError
from serving.openapi import json_body
from serving.protocol import EmbeddingRequest

router = APIRouter()


@router.post("/v1/embeddings", **json_body(EmbeddingRequest))
async def embeddings(request: Request, who: Principal = Depends(principal)) -> dict[str, Any]:
    svc = services(request)
    body = await read_model(request, EmbeddingRequest, who)
    if svc.embeddings is None:
        raise NotFoundError("embeddings are disabled on this server (embeddings.enabled)", code="not_found")
    return await svc.embeddings.embed(body, tenant=who.tenant)

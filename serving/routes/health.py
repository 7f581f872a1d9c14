"""GET /health: the gateway's and the engine's state (no auth, nothing tenant-specific)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from serving.dependencies import services
from serving.openapi import error_responses

router = APIRouter()


@router.get("/health", responses=error_responses(500, extra={503: "The engine is down (same body, status degraded)"}))
async def health(request: Request) -> JSONResponse:
    svc = services(request)
    engine_ok = await svc.engine.healthy()
    body = {
        "status": "ok" if engine_ok else "degraded",
        "gateway": "ok",
        "engine": "ok" if engine_ok else "unavailable",
        "model": svc.engine_model,
        "isolation_scope": svc.settings.isolation.scope,
    }  # nothing about auth: this route is unauthenticated
    return JSONResponse(body, status_code=200 if engine_ok else 503)

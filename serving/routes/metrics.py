"""GET /metrics: Prometheus text format."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from serving.dependencies import services
from serving.openapi import error_responses

router = APIRouter()


@router.get("/metrics", responses=error_responses(500))
async def metrics(request: Request) -> Response:
    return Response(services(request).metrics.render(), media_type=CONTENT_TYPE_LATEST)

"""GET /metrics: Prometheus text format; with `gateway.metrics_token` set, only for that bearer token."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from serving.dependencies import services
from serving.errors import AuthenticationError
from serving.openapi import error_responses

router = APIRouter()


@router.get("/metrics", responses=error_responses(401, 500))
async def metrics(request: Request) -> Response:
    svc = services(request)
    token = svc.settings.gateway.metrics_token
    if token is not None:  # a tenant's API key is not enough: the series name every tenant
        scheme, _, given = (request.headers.get("authorization") or "").partition(" ")
        expected = token.get_secret_value().encode()
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected):
            raise AuthenticationError("GET /metrics needs the metrics token: `Authorization: Bearer <token>`",
                                      code="invalid_metrics_token")  # fmt: skip
    return Response(svc.metrics.render(), media_type=CONTENT_TYPE_LATEST)

"""/v1/demonstrations: a tenant's demonstration memory — import (JSON lines), list or export, delete."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from retrieval.memory import DEMO_ID_PATTERN
from serving.auth import Principal
from serving.demonstrations import MAX_LIST, DemonstrationLine
from serving.dependencies import principal, read_body, services
from serving.errors import InvalidRequestError
from serving.openapi import error_responses, inline_schema

router = APIRouter()
DemoId = Path(pattern=DEMO_ID_PATTERN, max_length=32)
JSONL = "application/x-ndjson"
IMPORT_BODY = {  # documented as text/plain (what OpenAPI tools can send); every content type is read alike
    "required": True,
    "description": f'JSON lines ({JSONL}), one demonstration per line; a line `{{"tools": [...]}}` alone sets '
    "the catalog the next lines are checked against (default: the gateway's tools).",
    "content": {"text/plain": {"schema": {"type": "string", "x-line-schema": inline_schema(DemonstrationLine)}}},
}


@router.post(
    "/v1/demonstrations",
    openapi_extra={"requestBody": IMPORT_BODY},
    responses=error_responses(400, 401, 413, 429, 500, 503),
)
async def import_demonstrations(request: Request, who: Principal = Depends(principal)) -> dict[str, Any]:
    """Validate every line like a plan, then store them all (one bad line stores nothing)."""
    svc = services(request)
    raw = await read_body(request, svc.settings.gateway.max_body_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError("the request body is not valid UTF-8", code="invalid_json") from exc
    return await svc.memory().import_jsonl(who.tenant, text)


@router.get("/v1/demonstrations", responses=error_responses(400, 401, 500, 503))
async def list_demonstrations(
    request: Request,
    limit: int = Query(100, ge=1, le=MAX_LIST),
    offset: int = Query(0, ge=0, le=1_000_000),
    format: Literal["json", "jsonl"] = Query("json", description="`jsonl`: every demonstration, importable."),
    who: Principal = Depends(principal),
) -> Response:
    memory = services(request).memory()
    if format == "jsonl":
        return Response(await memory.export_jsonl(who.tenant), media_type=JSONL)
    return JSONResponse(await memory.listing(who.tenant, limit=limit, offset=offset))


@router.delete("/v1/demonstrations/{demo_id}", responses=error_responses(400, 401, 404, 500, 503))
async def delete_demonstration(
    request: Request, demo_id: str = DemoId, who: Principal = Depends(principal)
) -> dict[str, Any]:
    return await services(request).memory().delete(who.tenant, demo_id)

"""/v1/toolsets: a tenant's own MCP servers and OpenAPI services (thin: serving/toolsets/service.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import JSONResponse

from serving.auth import Principal
from serving.dependencies import principal, read_model, services
from serving.openapi import error_responses, json_body
from serving.toolsets.protocol import RESERVED, ToolsetCreate, builtin_views, toolset_view

router = APIRouter()
ToolsetKey = Path(pattern=r"^(ts_[0-9a-f]{8,40}|[a-z][a-z0-9_-]{0,47})$", max_length=48)
_REGISTER_ERRORS = {
    400: "Invalid registration, a URL the egress policy refuses (`egress_refused`), a redirect, unusable tools",
    409: "A toolset of that name exists (`toolset_exists`), or the tenant has too many (`too_many_toolsets`)",
    413: "Body over `tools.max_document_bytes`",
    502: "The server could not be reached or listed (`toolset_unreachable`)",
}


@router.post("/v1/toolsets", **json_body(ToolsetCreate, extra_errors=_REGISTER_ERRORS))
async def create_toolset(request: Request, who: Principal = Depends(principal)) -> JSONResponse:
    """Register an MCP server or an OpenAPI service; its tools are listed and checked now."""
    svc = services(request)
    # the document is the body's bulk: the body's bound is the document's (through the door, like every body)
    body = await read_model(request, ToolsetCreate, who, limit=svc.settings.tools.max_document_bytes)
    record = await svc.toolsets().add(who.tenant, body)
    return JSONResponse(toolset_view(record), status_code=201)


@router.get("/v1/toolsets", responses=error_responses(401, 503))
async def list_toolsets(request: Request, who: Principal = Depends(principal)) -> dict[str, Any]:
    """The tenant's toolsets, then the reserved ones every tenant has (`builtin`, `llm`, `ask_user`)."""
    svc = services(request)
    records = await svc.toolsets().list_toolsets(who.tenant)
    reserved = builtin_views(svc.run_tools().reserved_catalogs())
    return {"object": "list", "data": [toolset_view(r) for r in records] + reserved}


@router.get("/v1/toolsets/{key}", responses=error_responses(401, 404, 503))
async def get_toolset(request: Request, key: str = ToolsetKey, who: Principal = Depends(principal)) -> dict[str, Any]:
    """One toolset by id or name, with its tools' full definitions (never its secret)."""
    svc = services(request)
    if key in RESERVED:
        return builtin_views({key: svc.run_tools().reserved_catalogs()[key]})[0]
    return toolset_view(await svc.toolsets().get(who.tenant, key), definitions=True)


@router.post("/v1/toolsets/{key}/refresh", responses=error_responses(401, 404, 503, extra={502: "Unreachable"}))
async def refresh_toolset(
    request: Request, key: str = ToolsetKey, who: Principal = Depends(principal)
) -> dict[str, Any]:
    """List the tools again now (an MCP server also announces changes itself: tools/list_changed)."""
    return toolset_view(await services(request).toolsets().refresh(who.tenant, key), definitions=True)


@router.delete("/v1/toolsets/{key}", responses=error_responses(401, 404, 503))
async def delete_toolset(
    request: Request, key: str = ToolsetKey, who: Principal = Depends(principal)
) -> dict[str, Any]:
    """Delete it (runs that recorded its tools fail their calls of it from now on)."""
    record = await services(request).toolsets().delete(who.tenant, key)
    return {"id": record.toolset_id, "object": "toolset.deleted", "name": record.name, "deleted": True}

"""Request-scoped helpers shared by the routers: the services container, auth, bounded JSON bodies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel

from serving.auth import ApiKeyAuth, Principal
from serving.chat import ChatService
from serving.demonstrations import DemonstrationService
from serving.door import Door
from serving.door.bodies import decode_json, parse_model
from serving.embeddings import EmbeddingService
from serving.errors import EngineUnavailableError, PayloadTooLargeError
from serving.isolation import CacheSalter
from serving.metrics import GatewayMetrics
from serving.plans.service import PlanningGateway
from serving.runs.service import RunGateway
from serving.runs.tool_outputs import ToolOutputGateway
from serving.schema_guard import SchemaGuard
from serving.settings import Settings
from serving.steering import SteeringGateway
from serving.toolsets.run_tools import RunToolsService
from serving.toolsets.service import ToolsetService
from serving.upstream import EngineClient

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass
class Services:
    """Everything the routers use, made from the stack once per app by `serving.app.init_app_state`."""

    settings: Settings
    auth: ApiKeyAuth
    salter: CacheSalter
    metrics: GatewayMetrics
    engine: EngineClient
    guard: SchemaGuard
    chat: ChatService
    engine_model: str
    door: Door
    planning_gateway: PlanningGateway | None = None
    run_gateway: RunGateway | None = None
    embeddings: EmbeddingService | None = None
    steering_gateway: SteeringGateway | None = None
    demonstrations: DemonstrationService | None = None
    toolset_service: ToolsetService | None = None
    run_tools_service: RunToolsService | None = None
    tool_output_gateway: ToolOutputGateway | None = None

    def planning(self) -> PlanningGateway:
        if self.planning_gateway is None:
            raise EngineUnavailableError("the planner is not available in this gateway")
        return self.planning_gateway

    def memory(self) -> DemonstrationService:
        if self.demonstrations is None:
            raise EngineUnavailableError("the demonstration memory is not available in this gateway")
        return self.demonstrations

    def runs(self) -> RunGateway:
        if self.run_gateway is None:
            raise EngineUnavailableError("runs are not available yet (the gateway is starting)", retry_after_s=1)
        return self.run_gateway

    def toolsets(self) -> ToolsetService:
        if self.toolset_service is None:
            raise EngineUnavailableError("toolsets are not available yet (the gateway is starting)", retry_after_s=1)
        return self.toolset_service

    def run_tools(self) -> RunToolsService:
        if self.run_tools_service is None:
            raise EngineUnavailableError("toolsets are not available yet (the gateway is starting)", retry_after_s=1)
        return self.run_tools_service

    def tool_outputs(self) -> ToolOutputGateway:
        if self.tool_output_gateway is None:
            raise EngineUnavailableError("runs are not available yet (the gateway is starting)", retry_after_s=1)
        return self.tool_output_gateway

    def steering(self) -> SteeringGateway:
        if self.steering_gateway is None:
            raise EngineUnavailableError("runs are not available yet (the gateway is starting)", retry_after_s=1)
        return self.steering_gateway


def services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


async def principal(request: Request) -> Principal:
    """Async on purpose: FastAPI runs sync dependencies in a thread pool, a hop on every request."""
    return services(request).auth.authenticate(request.headers.get("authorization"))


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, read with a hard size cap (Content-Length is not trusted alone)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLargeError(f"the request body is {declared} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLargeError(f"the request body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, limit: int) -> Any:
    """The request body as JSON, read with a hard size cap (decoded on the event loop: for bodies a
    route validates into a model, `read_model` is the door's bounded way)."""
    return decode_json(await read_body(request, limit))


async def read_model(
    request: Request, model: type[ModelT], who: Principal, *, optional: bool = False, limit: int | None = None
) -> ModelT:
    """THE way a route reads its JSON body: read with a hard size cap (`limit`, else
    `gateway.max_body_bytes`), then decoded and validated into `model` by the door (on the event loop
    when small, else in a worker on the tenant's share). `optional`: a request without a body is `{}`
    (POST actions whose fields are all optional)."""
    svc = services(request)
    if optional and request.headers.get("content-length", "0") == "0" and "transfer-encoding" not in request.headers:
        body = b"{}"
    else:
        body = await read_body(request, svc.settings.gateway.max_body_bytes if limit is None else limit)
    return await svc.door.parse(model, body, tenant=who.tenant)


__all__ = ["Services", "parse_model", "principal", "read_body", "read_json", "read_model", "services"]

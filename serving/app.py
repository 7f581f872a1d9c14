"""The gateway application: the stack's handlers on `app.state`, routers mounted, one error funnel."""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.datastructures import State
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contract.errors import PlanstackBaseError
from executors.upkeep import upkeep
from serving import __version__
from serving.auth import ApiKeyAuth
from serving.chat import ChatService
from serving.dependencies import Services
from serving.errors import InvalidRequestError, NotFoundError, PlanstackError, error_body
from serving.loop_monitor import monitored_loop
from serving.metrics import GatewayMetrics
from serving.plans.service import PlanningGateway
from serving.routes import approvals as approvals_route
from serving.routes import chat as chat_route
from serving.routes import completions as completions_route
from serving.routes import demonstrations as demonstrations_route
from serving.routes import embeddings as embeddings_route
from serving.routes import escalations as escalations_route
from serving.routes import feedback as feedback_route
from serving.routes import health as health_route
from serving.routes import metrics as metrics_route
from serving.routes import models as models_route
from serving.routes import plans as plans_route
from serving.routes import responses as responses_route
from serving.routes import runs as runs_route
from serving.routes import tool_outputs as tool_outputs_route
from serving.routes import toolsets as toolsets_route
from serving.routes import webhooks as webhooks_route
from serving.runs.service import RunGateway
from serving.runs.tool_outputs import ToolOutputGateway
from serving.settings import Settings
from serving.stack import Stack, build_stack
from serving.steering import SteeringGateway
from serving.ui import ui_router

logger = logging.getLogger("planstack.gateway")


class MetricsMiddleware:
    """Counts every response and times it to its last byte, labelled by route template."""

    def __init__(self, app: ASGIApp, metrics: GatewayMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                route = scope.get("route")
                label = getattr(route, "path", "unmatched")
                self.metrics.requests.labels(label, str(status)).inc()
                self.metrics.latency.labels(label).observe(time.perf_counter() - started)
            await send(message)

        await self.app(scope, receive, send_wrapper)


def _error_response(exc: BaseException, metrics: GatewayMetrics) -> JSONResponse:
    status, body, headers = error_body(exc)
    metrics.errors.labels(body["error"]["type"]).inc()
    return JSONResponse(body, status_code=status, headers=headers)


def install_error_funnel(app: FastAPI, metrics: GatewayMetrics) -> None:
    @app.exception_handler(PlanstackBaseError)  # any package's typed error: the status its class declares
    async def _typed(_: Request, exc: PlanstackBaseError) -> JSONResponse:
        return _error_response(exc, metrics)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        param = ".".join(str(part) for part in first["loc"] if part != "body") or None
        return _error_response(InvalidRequestError(str(first["msg"]), param=param), metrics)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return _error_response(NotFoundError("no such endpoint", code="not_found"), metrics)
        error = PlanstackError(str(exc.detail), code=f"http_{exc.status_code}")
        error.status, error.type = exc.status_code, "invalid_request_error"
        return _error_response(error, metrics)

    @app.exception_handler(Exception)
    async def _unhandled(_: Request, exc: Exception) -> JSONResponse:
        return _error_response(exc, metrics)


def init_app_state(state: State, stack: Stack) -> Services:
    """The routers' handlers, made from the stack; routers only fetch them from `app.state`. The run
    gateway joins them once the stack has started (until then `/v1/runs` answers 503)."""
    settings = stack.settings
    state.services = Services(
        settings=settings,
        auth=ApiKeyAuth.from_settings(settings),
        salter=stack.salter,
        metrics=stack.metrics,
        engine=stack.engine,
        guard=stack.guard,
        chat=ChatService(
            settings, stack.engine, stack.engine_model, stack.salter, stack.guard, stack.metrics, door=stack.door
        ),
        engine_model=stack.engine_model,
        door=stack.door,
        planning_gateway=PlanningGateway(
            stack.planner, stack.salter, stack.metrics, stack.engine.slots, stack.demonstrations, door=stack.door
        ),
        embeddings=stack.embeddings,
        demonstrations=stack.demonstrations,
    )
    return state.services


def wire_toolsets(services: Services, stack: Stack) -> None:
    """The tenants' toolsets once the stack has started: their service, the runs' tools and the answers
    to the calls runs hand to their callers; plans and the planner model resolve `toolsets` through them."""
    assert stack.toolsets is not None and stack.run_tools is not None
    services.toolset_service = stack.toolsets
    services.run_tools_service = stack.run_tools
    services.tool_output_gateway = ToolOutputGateway(stack.run_service(), stack.run_tools)
    services.planning().run_tools = stack.run_tools


def create_app(source: Stack | Settings, *, engine_model: str | None = None, model_dir: Path | None = None) -> FastAPI:
    """The gateway over a stack: one built by `build_stack`, or settings to build one from (with the
    engine's served model name and the prepared weights folder, as `build_stack` takes them). The
    app's lifespan starts the stack and closes it."""
    stack = source if isinstance(source, Stack) else build_stack(source, engine_model=engine_model, model_dir=model_dir)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with stack:
            services.run_gateway = RunGateway(
                stack.run_service(), services.planning(), webhooks=stack.settings.webhooks
            )
            services.steering_gateway = SteeringGateway(stack.run_service(), services.planning())
            wire_toolsets(services, stack)
            # What start-up built lives as long as the gateway: out of the cyclic GC's sight, so that a large
            # request's allocations do not set off full collections of it (100-260 ms of the event loop each,
            # measured under load here); unfrozen at shutdown (tests run many gateways in one process).
            gc.freeze()
            try:
                # takeover, approval expiry, retention purge; the loop's own stalls measured
                async with upkeep(stack.run_service()), monitored_loop(stack.metrics):
                    yield
            finally:
                gc.unfreeze()
                services.run_gateway = services.steering_gateway = None
                services.toolset_service = services.run_tools_service = services.tool_output_gateway = None
                services.planning().run_tools = None

    app = FastAPI(title="planstack", version=__version__, lifespan=lifespan)
    app.state.stack = stack
    app.state.started_at = time.time()
    services = init_app_state(app.state, stack)
    routes = (models_route, chat_route, responses_route, completions_route, embeddings_route, plans_route, runs_route)
    tool_routes = (toolsets_route, tool_outputs_route)
    steering_routes = (approvals_route, escalations_route, webhooks_route)
    memory_routes = (feedback_route, demonstrations_route)
    for module in (*routes, *tool_routes, *steering_routes, *memory_routes, health_route, metrics_route):
        app.include_router(module.router)
    if stack.settings.ui.enabled:
        app.include_router(ui_router())
    install_error_funnel(app, stack.metrics)
    app.add_middleware(MetricsMiddleware, metrics=stack.metrics)
    return app

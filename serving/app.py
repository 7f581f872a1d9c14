"""The gateway application: services wired once, routers mounted, every error through one funnel."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from executors.runs import RunService
from executors.scheduler import DagScheduler
from executors.stores import RunStoreError, open_run_store
from executors.upkeep import upkeep
from serving import __version__
from serving.auth import ApiKeyAuth
from serving.chat import ChatService
from serving.dependencies import Services
from serving.embeddings import EmbeddingService
from serving.engine.process import engine_api_key
from serving.errors import InvalidRequestError, NotFoundError, PlanstackError, error_body
from serving.isolation import CacheSalter, server_secret
from serving.metrics import GatewayMetrics
from serving.planning import PlanningGateway, RunGateway, TenantReplanner, store_unavailable
from serving.routes import chat as chat_route
from serving.routes import completions as completions_route
from serving.routes import embeddings as embeddings_route
from serving.routes import health as health_route
from serving.routes import metrics as metrics_route
from serving.routes import models as models_route
from serving.routes import plans as plans_route
from serving.routes import responses as responses_route
from serving.routes import runs as runs_route
from serving.routing import EngineRouting
from serving.schema_guard import CompileWorker, SchemaGuard
from serving.settings import Settings
from serving.stack import Domain, build_domain
from serving.upstream import EngineClient

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
    @app.exception_handler(PlanstackError)
    async def _planstack(_: Request, exc: PlanstackError) -> JSONResponse:
        return _error_response(exc, metrics)

    @app.exception_handler(RunStoreError)
    async def _store(_: Request, exc: RunStoreError) -> JSONResponse:
        return _error_response(store_unavailable(exc), metrics)

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


def create_app(
    settings: Settings,
    *,
    engine_model: str,
    model_dir: Path | None,
    http: httpx.AsyncClient | None = None,
    domain: Domain | None = None,
) -> FastAPI:
    """Build the gateway. `http` (the engine connection pool) and `domain` (planner, tools, run store)
    may be injected; else they are built here from `settings`."""
    metrics = GatewayMetrics()
    own_http = http is None
    client = http or httpx.AsyncClient(
        timeout=httpx.Timeout(settings.engine.request_timeout_s, connect=settings.engine.connect_timeout_s),
        limits=httpx.Limits(max_connections=settings.gateway.max_concurrent_upstream + 8),
    )
    secret = server_secret(settings)
    engine = EngineClient(
        settings.engine.base_url,
        timeout_s=settings.engine.request_timeout_s,
        connect_timeout_s=settings.engine.connect_timeout_s,
        max_connections=settings.gateway.max_concurrent_upstream + 8,
        metrics=metrics,
        api_key=engine_api_key(settings),
        routing=EngineRouting.from_settings(settings.engine),
    )
    backend = settings.engine.structured_outputs_backend
    worker = CompileWorker(model_dir, backend) if model_dir is not None else None
    guard = SchemaGuard(settings.schema_guard, backend, metrics, worker)
    salter = CacheSalter(settings.isolation.scope, secret)
    domain = domain or build_domain(settings, engine_model=engine_model, http=client)
    planning = PlanningGateway(domain.planner, salter, metrics)
    services = Services(
        settings=settings,
        auth=ApiKeyAuth.from_settings(settings),
        salter=salter,
        metrics=metrics,
        engine=engine,
        guard=guard,
        chat=ChatService(settings, engine, engine_model, salter, guard, metrics),
        engine_model=engine_model,
        planning_gateway=planning,
        embeddings=EmbeddingService.from_settings(settings.embeddings, settings.retrieval)
        if settings.embeddings.enabled
        else None,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        store = open_run_store(settings)
        runs = RunService(
            store, DagScheduler(domain.registry, settings.executors), replanner=TenantReplanner(domain.planner, salter)
        )
        services.run_gateway = RunGateway(runs, planning)
        try:
            async with upkeep(runs):  # takeover of runs whose driver died, retention purge
                yield
        finally:
            services.run_gateway = None
            await runs.aclose()
            await store.aclose()
            guard.close()
            if services.embeddings is not None:
                services.embeddings.close()
            await engine.close()
            if own_http:
                await client.aclose()

    app = FastAPI(title="planstack", version=__version__, lifespan=lifespan)
    app.state.services = services
    app.state.started_at = time.time()
    routes = (models_route, chat_route, responses_route, completions_route, embeddings_route, plans_route, runs_route)
    for module in (*routes, health_route, metrics_route):
        app.include_router(module.router)
    install_error_funnel(app, services.metrics)
    app.add_middleware(MetricsMiddleware, metrics=services.metrics)
    return app

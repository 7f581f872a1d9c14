"""The composition root: every long-lived object of planstack, built once from `Settings`.

`build_stack(settings)` makes the ONE engine client (chat relay, tool calls, planner and re-planner
traffic all take its bounded per-tenant slots), the planner on top of it, the tool registry with the
knowledge base, the model's plan steps (`llm_generate`, `llm_extract`), the cache salter, the schema
guard, the embedding service and each tenant's demonstration memory (all on the knowledge base's
model: one MiniLM per process); `await stack.start()` (or `async with stack:`) opens the run store,
the tenants' toolsets (their live sources, their sealed credentials) and the run service inside the
running event loop, and `aclose()` closes everything in reverse order. The gateway's lifespan, every CLI
command, the benchmarks (`standalone_planner_llm`, `build_planner`, `StandaloneRuns`) and the test
helpers get their objects here; nothing else constructs them.
Tests inject a registry or a planner LLM.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.demonstrations import DemonstrationSource
from contract.plan import Plan
from executors.config import ExecutorConfig
from executors.registry import ToolRegistry
from executors.runs import RunService, RunView
from executors.scheduler import DagScheduler
from executors.sources.egress import Resolver
from executors.sources.llm_steps import StepLimits, register_llm_steps
from executors.stores import RunStore, open_run_store
from executors.tools import KnowledgeSearch, default_registry
from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.llm import PlannerLLM
from planner.service import PlannerService
from planner.similarity import CachedEmbedder, TextEmbedder
from retrieval.embedder import SentenceTransformerEmbedder
from retrieval.knowledge import KnowledgeBase
from retrieval.memory import TenantMemory
from serving.backpressure import UpstreamSlots
from serving.demonstrations import DemonstrationService
from serving.door import Door, DoorPool
from serving.embeddings import EmbeddingService, embedding_slots
from serving.engine.process import engine_api_key
from serving.engine.profiles import load_profile
from serving.engine_llm import EnginePlannerLLM
from serving.errors import EngineUnavailableError
from serving.isolation import CacheSalter, server_secret
from serving.metrics import GatewayMetrics
from serving.plans.replanner import TenantReplanner
from serving.routing import EngineRouting
from serving.schema_guard import CompileWorker, SchemaGuard
from serving.settings import Settings
from serving.steering import steering_of
from serving.toolsets.connections import ToolsetConnections
from serving.toolsets.llm_model import EngineStepModel
from serving.toolsets.run_tools import RunToolsService
from serving.toolsets.security import credential_sealer, tool_schema_check
from serving.toolsets.service import ToolsetService
from serving.upstream import EngineClient


@dataclass
class Stack:
    """The product behind every entry point; `store` and `runs` exist between start() and aclose()."""

    settings: Settings
    metrics: GatewayMetrics
    engine: EngineClient
    engine_model: str
    planner_llm: PlannerLLM
    knowledge_base: KnowledgeBase
    registry: ToolRegistry
    planner: PlannerService
    salter: CacheSalter
    guard: SchemaGuard
    embeddings: EmbeddingService | None  # /v1/embeddings (None when disabled), on the knowledge base's model
    demonstrations: DemonstrationService  # each tenant's memory (the planner searches it), feedback, import
    steps: ToolRegistry  # llm_generate / llm_extract on the served model (the reserved toolset `llm`)
    door: Door  # the checks at the door: bounded, off the event loop, fair between tenants
    run_store_url: str | None = None  # a SQLite file or a store URL; None: the settings' `runs.store_url`
    resolver: Resolver | None = None  # how toolsets' host names resolve (tests); None: tools.hosts, then DNS
    store: RunStore | None = field(default=None, init=False)
    runs: RunService | None = field(default=None, init=False)
    toolsets: ToolsetService | None = field(default=None, init=False)
    run_tools: RunToolsService | None = field(default=None, init=False)
    _resources: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack, init=False, repr=False)

    async def start(self) -> Stack:
        """Open the run store and start the run service (idempotent)."""
        if self.runs is not None:
            return self
        self.store = await self._resources.enter_async_context(run_store_for(self.settings, url=self.run_store_url))
        replanner = TenantReplanner(
            self.planner, self.salter, self.engine.slots, slot_wait_s=self.settings.gateway.replan_slot_wait_s
        )
        steering = steering_of(self.settings, self.store, server_secret(self.settings), self.metrics)
        if steering.notifier is not None:
            self._resources.push_async_callback(steering.notifier.aclose)  # after the runs have stopped
        tools = self.settings.tools
        sealer = credential_sealer(server_secret(self.settings))
        connections = ToolsetConnections(tools, sealer, tool_schema_check, resolver=self.resolver)
        self._resources.push_async_callback(connections.aclose)  # after the runs have stopped
        self.toolsets = ToolsetService(self.store, connections, tools, sealer, tool_schema_check, self.door)
        self.run_tools = RunToolsService(self.toolsets, self.registry, self.steps, tools, tool_schema_check, self.door)
        self.runs = RunService(
            self.store,
            DagScheduler(self.registry, self.settings.executors, tool_calls=self.metrics),
            replanner=replanner,
            steering=steering,
            on_succeeded=self.demonstrations.learn_from_run,
            outside_bytes=self.demonstrations.outside_bytes,  # demonstrations, cached catalogs: with its runs
            tools=self.run_tools,
        )
        self._resources.push_async_callback(self.runs.aclose)
        self.demonstrations.attach(self.store)
        return self

    async def aclose(self) -> None:
        """Stop the runs (they stay resumable), close the store, the guard's worker and the engine
        pool; a stack that was never started closes what it made (the engine pool) all the same."""
        self.runs, self.store, self.toolsets, self.run_tools = None, None, None, None
        self.demonstrations.attach(None)
        await self._resources.aclose()
        await asyncio.to_thread(self.demonstrations.memory.flush)
        self.guard.close()
        self.door.close()
        if self.embeddings is not None:
            self.embeddings.close()
        await self.engine.close()

    async def __aenter__(self) -> Stack:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def run_service(self) -> RunService:
        if self.runs is None:
            raise EngineUnavailableError("runs are not available yet (the gateway is starting)", retry_after_s=1)
        return self.runs


def build_stack(
    settings: Settings,
    *,
    engine_model: str | None = None,
    model_dir: Path | None = None,
    registry: ToolRegistry | None = None,
    planner_llm: PlannerLLM | None = None,
    run_store_url: str | None = None,
    resolver: Resolver | None = None,
) -> Stack:
    """Everything from `settings`. `engine_model` defaults to the profile's served name; `model_dir`
    (the prepared weights) lets the schema guard pre-compile client schemas as the engine would;
    `registry` and `planner_llm` replace the demo tools and the engine-backed planner model, `resolver`
    the name resolution of toolsets' hosts (tests)."""
    metrics = GatewayMetrics(tenant_labels=settings.gateway.metrics_token is not None)  # only behind the token
    metrics.bound_tool_labels(settings.tools.metrics_max_sources, settings.tools.metrics_max_tools_per_source)
    profile = load_profile(settings.engine.profile)
    model = engine_model or profile.served_model_name
    engine = build_engine_client(settings, metrics)
    llm = planner_llm or EnginePlannerLLM(engine, model)
    knowledge = open_knowledge_base(settings)
    tools = registry or default_registry(knowledge=searchable(knowledge))
    backend = settings.engine.structured_outputs_backend
    worker = CompileWorker(model_dir, backend) if model_dir is not None else None
    vectors = CachedEmbedder(knowledge.embedder)  # one MiniLM: tools, steps, demonstrations
    memory = open_memory(settings, knowledge, vectors)
    planner = build_planner(
        planner_config_of(settings), llm=llm, catalog=catalog_of(tools), demos=memory, embedder=vectors
    )
    salter = CacheSalter(settings.isolation.scope, server_secret(settings))
    guard = SchemaGuard(settings.schema_guard, backend, metrics, worker)
    door = Door(settings.door, DoorPool(settings.door, metrics))
    embedding_shares = embedding_slots(settings.embeddings)  # /v1/embeddings and imports share them per tenant
    embeddings = EmbeddingService(settings.embeddings, knowledge.embedder, embedding_shares)
    return Stack(
        settings=settings,
        metrics=metrics,
        engine=engine,
        engine_model=model,
        planner_llm=llm,
        knowledge_base=knowledge,
        registry=tools,
        planner=planner,
        salter=salter,
        guard=guard,
        embeddings=embeddings if settings.embeddings.enabled else None,
        demonstrations=DemonstrationService(memory, planner, settings.learning, door, embedding_shares),
        steps=step_registry(settings, llm, salter, engine, guard),
        door=door,
        run_store_url=run_store_url,
        resolver=resolver,
    )


def step_registry(
    settings: Settings, llm: PlannerLLM, salter: CacheSalter, engine: EngineClient, guard: SchemaGuard
) -> ToolRegistry:
    """`llm_generate` and `llm_extract` on the planner's model client (its engine slots, the tenant's salt)."""
    limits = settings.tools.llm
    model = EngineStepModel(llm, salter, engine.slots, guard, limits)
    bounds = StepLimits(
        max_tokens=limits.max_tokens, max_input_chars=limits.max_input_chars, timeout_s=limits.timeout_s
    )
    return register_llm_steps(ToolRegistry(), model, bounds)


def build_engine_client(settings: Settings, metrics: GatewayMetrics | None = None) -> EngineClient:
    """The one client of the engine at `settings.engine`, with the gateway's slots."""
    gateway = settings.gateway
    return EngineClient(
        settings.engine.base_url,
        timeout_s=settings.engine.request_timeout_s,
        connect_timeout_s=settings.engine.connect_timeout_s,
        slots=UpstreamSlots(gateway.max_concurrent_upstream, gateway.max_concurrent_upstream_per_tenant, metrics),
        metrics=metrics,
        api_key=engine_api_key(settings),
        routing=EngineRouting.from_settings(settings.engine),
    )


def build_planner(
    config: PlannerConfig,
    *,
    llm: PlannerLLM,
    catalog: ToolCatalog,
    demos: DemonstrationSource | None = None,
    embedder: TextEmbedder | None = None,
) -> PlannerService:
    """The planner over `catalog` (the benchmarks build their variants here too). `embedder`: the packaged
    MiniLM the gateway shares with the knowledge base (tool shortlist, proposals, demonstrations)."""
    return PlannerService.from_config(config, llm=llm, catalog=catalog, demos=demos, embedder=embedder)


@contextlib.asynccontextmanager
async def standalone_planner_llm(
    engine_url: str,
    model: str,
    *,
    timeout_s: float,
    connect_timeout_s: float = 3.0,
    max_in_flight: int = 64,
    api_key: str | None = None,
) -> AsyncIterator[EnginePlannerLLM]:
    """The planner's engine client for an engine URL outside any gateway (benchmarks): the same
    classes as the stack's, closed on exit. `api_key`: the engine's key (`existing_engine_key`)."""
    engine = EngineClient(
        engine_url,
        timeout_s=timeout_s,
        connect_timeout_s=connect_timeout_s,
        slots=UpstreamSlots(max_in_flight, max_in_flight),
        api_key=api_key,
    )
    try:
        yield EnginePlannerLLM(engine, model)
    finally:
        await engine.close()


@contextlib.asynccontextmanager
async def run_store_for(settings: Settings, *, url: str | None = None) -> AsyncIterator[RunStore]:
    """THE place where the stack opens and closes its run store: `url` (a SQLite file or a store URL)
    or the settings' `runs.store_url` (default: SQLite in the home folder), with the settings' leases,
    quotas and retention."""
    store = open_run_store(url or settings, config=settings.runs)
    try:
        yield store
    finally:
        await store.aclose()


class StandaloneRuns:
    """Given plans run to the end without a gateway (benchmarks): the stack's run store, scheduler and
    run service over `registry` (default: the demo tools), with no re-planner, steering or learning.
    Each `run` gets a fresh scheduler, so one plan's circuit breakers never fail the next; `sleep`
    and `seed` make retry backoff instant and its jitter repeatable."""

    def __init__(
        self,
        store_url: str,
        *,
        registry: ToolRegistry | None = None,
        config: ExecutorConfig | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        seed: int | None = None,
    ) -> None:
        self.store = open_run_store(store_url)
        self.registry = registry or default_registry()
        self._config = config or ExecutorConfig()
        self._sleep = sleep
        self._seed = seed

    async def run(self, tenant: str, request: str, plan: Plan) -> RunView:
        rng = None if self._seed is None else random.Random(self._seed)
        service = RunService(self.store, DagScheduler(self.registry, self._config, sleep=self._sleep, rng=rng))
        try:
            return await service.run(tenant, request, plan)
        finally:
            await service.aclose()

    async def aclose(self) -> None:
        await self.store.aclose()


def planner_config_of(settings: Settings) -> PlannerConfig:
    """The planner configuration the gateway plans with: the settings over the engine profile's defaults."""
    return load_profile(settings.engine.profile).planner_config(settings.planner)


def planner_embedder(settings: Settings) -> CachedEmbedder:
    """The packaged MiniLM the gateway's planner selects tools and demonstrations with, configured as the
    knowledge base's (planners built outside a stack, e.g. by the benchmarks, use it too: without it a
    planner falls back to the model-free hashing embedder)."""
    return CachedEmbedder(SentenceTransformerEmbedder.from_config(settings.retrieval))


def open_knowledge_base(settings: Settings) -> KnowledgeBase:
    """The FAISS knowledge base over <home>/indexes (the embedding model loads on first search)."""
    return KnowledgeBase.from_home(settings.home, settings.retrieval)


def open_memory(settings: Settings, knowledge: KnowledgeBase, vectors: CachedEmbedder) -> TenantMemory:
    """Each tenant's demonstration memory, in the knowledge base's store (<home>/indexes/tenants/<t>/) and
    on its model; `vectors` is the planner's cache of that model."""
    return TenantMemory(knowledge.store, knowledge.embedder, settings.learning, vectors=vectors)


def searchable(knowledge: KnowledgeBase) -> KnowledgeSearch | None:
    """The knowledge base when `planstack index build` has run, else None (the tools then use their
    keyword search over executors/data/knowledge.json)."""
    return knowledge if knowledge.collections() else None


def knowledge_for(settings: Settings) -> KnowledgeSearch | None:
    return searchable(open_knowledge_base(settings))


def openai_tools_of(registry: ToolRegistry) -> list[dict[str, Any]]:
    """The registry's tools in OpenAI format, each with its `output_schema` (the planstack extension that
    makes output fields referencable): THE way a catalog is made from executable tools."""
    tools = []
    for spec in registry.catalog():
        tool = spec.openai_tool()
        tool["function"]["output_schema"] = spec.output_schema
        tools.append(tool)
    return tools


def catalog_of(registry: ToolRegistry) -> ToolCatalog:
    """The planner's catalog from the executors' registry."""
    return ToolCatalog.from_openai(openai_tools_of(registry))


def demo_catalog() -> ToolCatalog:
    """The travel/meeting demo tools as the gateway plans over them (benchmarks, tests)."""
    return catalog_of(default_registry())

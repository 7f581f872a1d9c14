"""The composition root: planner, tool registry and run store built from settings, clients injected.

Nothing here runs at import time; `build_domain` is called once per gateway (and by the CLI), and
the `RunService` itself is created inside the running event loop by the app's lifespan.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx

from executors.registry import ToolRegistry
from executors.tools import KnowledgeSearch, default_registry
from planner.catalog import ToolCatalog
from planner.llm import VLLMChatClient
from planner.service import PlannerService
from serving.engine.process import engine_api_key
from serving.routing import EngineRouting
from serving.settings import Settings


@dataclass
class Domain:
    """The product behind the OpenAI-compatible surface."""

    planner: PlannerService
    registry: ToolRegistry
    run_store_path: Path


def catalog_of(registry: ToolRegistry) -> ToolCatalog:
    """The planner's catalog from the executors' registry (output schemas make fields referencable)."""
    tools = []
    for spec in registry.catalog():
        tool = spec.openai_tool()
        tool["function"]["output_schema"] = spec.output_schema
        tools.append(tool)
    return ToolCatalog.from_openai(tools)


def knowledge_for(settings: Settings) -> KnowledgeSearch | None:
    """The FAISS knowledge base when `planstack index build` has run, else None (the tools then use
    their keyword search over executors/data/knowledge.json). The embedding model loads lazily."""
    from retrieval.knowledge import KnowledgeBase

    knowledge = KnowledgeBase.from_home(settings.home, settings.retrieval)
    return knowledge if knowledge.collections() else None


def planner_llm(settings: Settings, engine_model: str, http: httpx.AsyncClient) -> VLLMChatClient:
    """The planner's client of the engine, sending the engine's key."""
    return VLLMChatClient(
        settings.engine.base_url,
        engine_model,
        http,
        timeout_s=settings.engine.request_timeout_s,
        headers=EngineRouting.from_settings(settings.engine).headers,
        api_key=engine_api_key(settings),
    )


def build_domain(settings: Settings, *, engine_model: str, http: httpx.AsyncClient) -> Domain:
    registry = default_registry(knowledge=knowledge_for(settings))
    llm = planner_llm(settings, engine_model, http)
    planner = PlannerService.from_config(settings.planner, llm=llm, catalog=catalog_of(registry))
    return Domain(planner=planner, registry=registry, run_store_path=settings.home / "runs.sqlite3")

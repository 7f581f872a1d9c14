"""Where a benchmarked plan comes from: the planner in-process, the gateway, or a nearest-neighbour copy.

Every source answers `plan(case) -> Outcome`, whose `path` says what produced the plan: the planner's
own paths (`model`, `model_retry`, `fallback`, `cache`), `failed` (no valid plan: PlanningFailed /
HTTP 422), `error:<status>` (transport or server error), `copy` / `none` for the nearest copy.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol, TypeVar

import httpx

from benchmarks.harness.datasets import Case, Dataset
from benchmarks.harness.demos import ExampleIndex
from contract.plan import Plan
from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.llm import LLMTimeout, LLMUnavailable, PlannerLLM
from planner.results import PlanResult
from planner.service import PlannerService, PlanningFailed
from planner.similarity import CachedEmbedder

T = TypeVar("T")
MODEL_PATHS = frozenset({"model", "model_retry", "cache"})  # the cache only ever stores model-path plans
PRIMARY_PATHS = MODEL_PATHS | {"copy"}
TENANT = "bench"


@dataclass
class Outcome:
    plan: Plan | None
    path: str
    latency_s: float
    completion_tokens: int = 0
    attempts: int = 0
    error: str | None = None


class PlanSource(Protocol):
    async def plan(self, case: Case) -> Outcome: ...


async def patiently(call: Callable[[], Awaitable[T]], *, retries: int = 20, wait_s: float = 30.0) -> T:
    """`call()`, again after `wait_s` while the engine is unreachable (a restart takes minutes): a long
    benchmark survives an engine outage instead of losing its run. Waits are logged."""
    for attempt in range(retries):
        try:
            return await call()
        except (LLMUnavailable, LLMTimeout) as exc:
            if attempt == retries - 1:
                raise
            logging.getLogger("planstack.bench").warning("engine: %s; retrying in %.0f s", exc, wait_s)
            await asyncio.sleep(wait_s)
    raise AssertionError("unreachable")


def demo_domain_catalog() -> ToolCatalog:
    """The demo domain's catalog exactly as serving/stack.py builds it from the executors' registry."""
    from executors.tools import default_registry
    from serving.stack import catalog_of

    return catalog_of(default_registry())


def planner_config(base: PlannerConfig, dataset: Dataset, variant: str) -> PlannerConfig:
    """The production config (settings.planner) for one benchmark variant: no plan cache, the data
    set's `today`; `unconstrained` = no grammar, one attempt, no fallback (the decoding baseline)."""
    update: dict[str, Any] = {"cache_ttl_s": 0.0, "today": dataset.today or base.today or date.today()}
    if dataset.tools is not None or dataset.per_case_tools:  # long external specs: room for 2 examples
        update["prompt_max_tools"] = min(base.prompt_max_tools, 6)
    if variant == "unconstrained":
        update.update(strategy="unconstrained", max_retries=0, fallback_enabled=False)
    return base.model_copy(update=update)


def build_service(
    base: PlannerConfig,
    dataset: Dataset,
    variant: str,
    llm: PlannerLLM,
    demos: ExampleIndex,
    embedder: CachedEmbedder | None = None,
) -> PlannerService:
    """The planner of one variant; `embedder`: the gateway's MiniLM (serving.stack.planner_embedder), so the
    tool shortlist and proposal are the product's."""
    from serving.stack import build_planner

    if dataset.per_case_tools and dataset.cases and dataset.cases[0].tools:  # each request sends its own
        catalog = ToolCatalog.from_openai(dataset.cases[0].tools)
    elif dataset.tools is not None:
        catalog = ToolCatalog.from_openai(dataset.tools)
    else:
        catalog = demo_domain_catalog()
    return build_planner(
        planner_config(base, dataset, variant), llm=llm, catalog=catalog, demos=demos, embedder=embedder
    )


class ServicePlanner:
    """A `PlannerService` called in-process (against `--engine-url`). `tools` gives a case its own catalog
    (OpenAI format; None: the service's); `on_result` sees every planning answer (online mode keeps its id)."""

    def __init__(
        self,
        service: PlannerService,
        *,
        tools: Callable[[Case], list[dict[str, Any]] | None] | None = None,
        on_result: Callable[[Case, PlanResult], Awaitable[None]] | None = None,
        tenant: str = TENANT,
    ) -> None:
        self.service = service
        self.tools = tools
        self.on_result = on_result
        self.tenant = tenant

    async def plan(self, case: Case) -> Outcome:
        start = time.perf_counter()
        tools = self.tools(case) if self.tools is not None else None
        try:
            result = await self.service.plan(case.request, tenant=self.tenant, cache_salt=self.tenant, tools=tools)
            if self.on_result is not None:
                await self.on_result(case, result)
        except PlanningFailed as exc:
            tokens = sum(a.completion_tokens for a in exc.attempts)
            return Outcome(None, "failed", time.perf_counter() - start, tokens, len(exc.attempts), exc.reason[:300])
        return Outcome(
            result.plan,
            result.path if result.plan is not None or result.path == "needs_input" else "no_plan",
            time.perf_counter() - start,
            result.usage["completion_tokens"],
            len(result.attempts),
            result.fallback_reason,
        )


class GatewayPlanner:
    """`POST {gateway}/v1/plans` with the data set's tools (OpenAI format) when it has its own, or each
    case's own (`tools` a function of the case)."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        url: str,
        api_key: str | None,
        tools: list[dict[str, Any]] | Callable[[Case], list[dict[str, Any]] | None] | None,
    ):
        self.http = http
        self.url = url.rstrip("/") + "/v1/plans"
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.tools = tools

    async def plan(self, case: Case) -> Outcome:
        body: dict[str, Any] = {"request": case.request}
        tools = self.tools(case) if callable(self.tools) else self.tools
        if tools is not None:
            body["tools"] = tools
        start = time.perf_counter()
        try:
            response = await self.http.post(self.url, json=body, headers=self.headers)
        except httpx.HTTPError as exc:
            return Outcome(None, "error:transport", time.perf_counter() - start, error=f"{type(exc).__name__}: {exc}")
        latency = time.perf_counter() - start
        if response.status_code == 422:
            return Outcome(None, "failed", latency, error=_message(response))
        if response.status_code != 200:
            return Outcome(None, f"error:{response.status_code}", latency, error=_message(response))
        data = response.json()
        usage = data.get("usage") or {}
        return Outcome(
            Plan.model_validate(data["plan"]) if data.get("plan") is not None else None,
            str(data.get("path", "model")),
            latency,
            int(usage.get("completion_tokens", 0)),
            len(data.get("attempts") or []),
            data.get("fallback_reason"),
        )


class NearestCopy:
    """Baseline without a model: the plan of the most similar request in the example index."""

    def __init__(self, index: ExampleIndex) -> None:
        self.index = index

    async def plan(self, case: Case) -> Outcome:
        start = time.perf_counter()
        found = self.index.nearest_plan(case.request)
        if found is None:
            return Outcome(None, "none", time.perf_counter() - start, error="the example index is empty")
        return Outcome(Plan.model_validate(found), "copy", time.perf_counter() - start)


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", {}).get("message", ""))[:300]
    except ValueError:
        return response.text[:300]

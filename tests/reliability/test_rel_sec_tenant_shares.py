"""Issue 19, item 5: what tenants share, they share fairly and without telling each other anything.

- `/v1/embeddings` and demonstration imports take the tenant's share of one set of embedding slots
  (as engine traffic does: serving/backpressure.py), instead of one global queue one tenant can fill;
- the planner's query-embedding cache is scoped per tenant, so a tenant's planning time
  (`timings.prepare_s`) no longer tells it whether another tenant recently planned the same text;
- `/metrics` names tenants only behind `gateway.metrics_token`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from pydantic import SecretStr

from planner.config import PlannerConfig
from planner.similarity import CachedEmbedder, HashingEmbedder, embedding_scope
from serving.auth import Principal
from serving.backpressure import UpstreamSlots
from serving.embeddings import EmbeddingService
from serving.errors import RateLimitError
from serving.isolation import CacheSalter
from serving.metrics import GatewayMetrics
from serving.plans.service import PlanningGateway
from serving.protocol import EmbeddingRequest
from serving.settings import EmbeddingSettings, Settings
from serving.stack import build_planner, build_stack, demo_catalog
from tests.conftest import FAKE_MODEL, KEY_A, FakeStack
from tests.fakes.llm import FakePlannerLLM

pytestmark = pytest.mark.timeout(120)


class CountingEmbedder:
    """The hashing embedder, counting the texts it embeds (and taking `delay_s` per call)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.inner = HashingEmbedder(dim=32)
        self.delay_s = delay_s
        self.texts: list[str] = []
        self.lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self.lock:
            self.texts.extend(texts)
        time.sleep(self.delay_s)
        return self.inner.embed(texts)


def test_one_tenant_cannot_take_every_embedding_slot() -> None:
    settings = EmbeddingSettings(max_pending=4, max_pending_per_tenant=2)
    service = EmbeddingService(settings, CountingEmbedder(delay_s=0.5))  # type: ignore[arg-type]
    request = EmbeddingRequest(model=settings.model_id, input="hello")

    async def scenario() -> tuple[list[str], str]:
        async def one(tenant: str) -> str:
            try:
                await service.embed(request, tenant=tenant)
            except RateLimitError as exc:
                return f"429 {exc.retry_after_s}"
            return "200"

        flood = [asyncio.create_task(one("A")) for _ in range(3)]
        await asyncio.sleep(0.05)
        other = await one("B")
        return list(await asyncio.gather(*flood)), other

    try:
        flood, other = asyncio.run(scenario())
    finally:
        service.close()
    assert sorted(flood) == ["200", "200", "429 1"] and other == "200"


def test_imports_take_the_same_shares_as_embeddings(tmp_path: Path) -> None:
    stack = build_stack(Settings(home=tmp_path), engine_model=FAKE_MODEL, planner_llm=FakePlannerLLM())
    try:
        assert stack.embeddings is not None and stack.demonstrations.slots is stack.embeddings.slots

        async def full_share() -> str:
            slots: UpstreamSlots = stack.embeddings.slots  # type: ignore[union-attr]
            for _ in range(slots.per_tenant):
                await slots.acquire("A")
            try:
                line = {"request": "weather in Paris", "plan": {"nodes": [
                    {"id": "n1", "tool": "get_weather", "args": {"city": "Paris", "date": "2099-06-20"}}]}}  # fmt: skip
                await stack.demonstrations.import_jsonl("A", json.dumps(line))
            except RateLimitError as exc:
                return exc.message
            return "imported"

        assert "embedding model for this tenant" in asyncio.run(full_share())
    finally:
        asyncio.run(stack.aclose())


def test_cached_vectors_are_scoped_per_tenant_and_embedded_once_at_a_time() -> None:
    inner = CountingEmbedder(delay_s=0.3)
    cache = CachedEmbedder(inner)  # type: ignore[arg-type]
    with embedding_scope("A"):
        cache.embed(["book a flight to Paris"])
        cache.embed(["book a flight to Paris"])
    with embedding_scope("B"):
        cache.embed(["book a flight to Paris"])
    assert inner.texts == ["book a flight to Paris"] * 2  # once for A (then cached), once for B

    inner.texts.clear()
    texts = [f"tool {i}" for i in range(20)]

    def embed_as_a() -> None:
        with embedding_scope("A"):
            cache.embed(texts)

    threads = [threading.Thread(target=embed_as_a) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(inner.texts) == sorted(texts)  # four callers at once, one model run


def test_planning_caches_vectors_under_the_tenant(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    planner = build_planner(
        PlannerConfig(),
        llm=FakePlannerLLM(),
        catalog=demo_catalog(),
        embedder=CachedEmbedder(inner),  # type: ignore[arg-type]
    )
    metrics = GatewayMetrics()
    gateway = PlanningGateway(planner, CacheSalter("tenant", b"0" * 32), metrics, UpstreamSlots(4, 4))
    request = "Weather in Hangzhou on June 20, and a hotel near West Lake."

    async def plan_as(tenant: str) -> None:
        with contextlib.suppress(Exception):  # the fake model may fail planning; the vectors are what count
            await gateway.plan(request, Principal(tenant), None)

    asyncio.run(plan_as("A"))
    seen_by_a = inner.texts.count(request)
    asyncio.run(plan_as("B"))
    assert seen_by_a == 1 and inner.texts.count(request) == 2  # B's plan did not find A's vector


def test_metrics_name_tenants_only_behind_the_metrics_token(fake_stack_factory: Callable[..., FakeStack]) -> None:
    open_metrics = GatewayMetrics()
    open_metrics.approval_decided("tenantA", "approved", 1.0)
    open_metrics.escalated("tenantA", "timeout")
    assert b"tenantA" not in open_metrics.render()
    guarded = fake_stack_factory(gateway={"metrics_token": SecretStr("metrics-token-0123")})
    with guarded.gateway.client(KEY_A) as client:
        assert client.get("/metrics").status_code == 401  # a tenant's key is not enough
        assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        answer = client.get("/metrics", headers={"Authorization": "Bearer metrics-token-0123"})
    assert answer.status_code == 200 and "planstack_requests_total" in answer.text
    unguarded = fake_stack_factory()
    with unguarded.gateway.client(KEY_A) as client:
        assert client.get("/metrics", headers={"Authorization": ""}).status_code == 200

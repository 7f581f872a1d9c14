"""Against the REAL engine (marker `engine`): no mocks of the model here."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

import pytest

from planner.config import PlannerConfig
from planner.service import PlanResult, demo_catalog
from serving.stack import build_planner, standalone_planner_llm

pytestmark = pytest.mark.engine

REQUESTS = [
    "Find flights from Shanghai to Hangzhou on June 20 and the weather in Hangzhou that day.",
    "Find a hotel in Suzhou near Jinji Lake for 2 nights from 2027-05-03.",
    "Find a venue in Nanjing for 40 people on May 3 and a catering quote for it.",
    "Convert 500 USD to CNY.",
]


def plan_with(
    engine: tuple[str, str | None], engine_model: str, request: str, tenant: str = "test", **config: Any
) -> PlanResult:
    async def go() -> PlanResult:
        async with standalone_planner_llm(engine[0], engine_model, timeout_s=180, api_key=engine[1]) as llm:
            svc = build_planner(PlannerConfig(today=date(2026, 11, 30), **config), llm=llm, catalog=demo_catalog())
            return await svc.plan(request, tenant=tenant, cache_salt=f"planner-test-{tenant}")

    return asyncio.run(go())


@pytest.mark.parametrize("request_text", REQUESTS)
def test_model_plans_use_only_known_tools_and_arguments(
    engine_url: str, engine_key: str | None, engine_model: str, request_text: str
) -> None:
    result = plan_with((engine_url, engine_key), engine_model, request_text, fallback_enabled=False)
    assert result.path in ("model", "model_retry")
    assert result.validation is not None and result.validation.ok
    catalog = demo_catalog()
    for node in result.plan.nodes:
        assert node.tool in catalog
        assert set(node.args) <= set(catalog.get(node.tool).properties)
    assert result.usage["completion_tokens"] > 0


def test_fallback_engages_when_the_model_path_fails(engine_url: str, engine_key: str | None, engine_model: str) -> None:
    # max_tokens forced to 8: every JSON answer is cut off, so the model path fails for real
    result = plan_with((engine_url, engine_key), engine_model, REQUESTS[0], max_tokens_cap=8, max_retries=1)
    assert result.path == "fallback"
    assert result.fallback_reason and "JSON" in result.fallback_reason
    assert len(result.attempts) == 2 and all(a.error_layer == "schema" for a in result.attempts)
    assert [n.tool for n in result.plan.nodes] == ["search_flights", "get_weather"]

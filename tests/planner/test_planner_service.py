"""PlannerService with a scripted fake model (this tests orchestration, not the model)."""

from __future__ import annotations

import asyncio
import json
from datetime import date
from typing import Any

import pytest

from planner.cache import PlanCache
from planner.catalog import CatalogError
from planner.config import PlannerConfig
from planner.llm import Completion, LLMRejected, LLMUnavailable, Message
from planner.service import PlannerService, PlanningFailed
from tests.planner.helpers import DEMO_TOOLS, demo_catalog

REQUEST = "Find flights from Shanghai to Hangzhou on June 20 and the weather in Hangzhou."
FLIGHT = '{"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20", "max_price": null}'
WEATHER = '{"city": "Hangzhou", "date": "2027-06-20"}'


class ScriptedLLM:
    def __init__(self, replies: list[str | Exception]) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    async def complete(
        self, messages: list[Message], *, json_schema: dict[str, Any] | None, max_tokens: int, cache_salt: str | None
    ) -> Completion:
        self.calls.append({"messages": messages, "schema": json_schema, "max_tokens": max_tokens, "salt": cache_salt})
        reply = self.replies.pop(0) if self.replies else "{"
        if isinstance(reply, Exception):
            raise reply
        return Completion(reply, 100, 10, 0.5, 0.1, "stop")


def service(llm: ScriptedLLM, **overrides: Any) -> PlannerService:
    settings: dict[str, Any] = {"skeleton_agree_score": None, "skeleton_min_score": None, **overrides}
    config = PlannerConfig(today=date(2026, 11, 30), **settings)
    return PlannerService.from_config(config, llm=llm, catalog=demo_catalog())


def run(svc: PlannerService, request: str = REQUEST, tenant: str = "tenantA", **kw: Any) -> Any:
    return asyncio.run(svc.plan(request, tenant=tenant, cache_salt="salt-a", **kw))


def test_staged_model_path() -> None:
    llm = ScriptedLLM(['{"tools": ["search_flights", "get_weather"]}', FLIGHT, WEATHER])
    result = run(service(llm))
    assert result.path == "model" and result.plan.ids() == ["n1", "n2"]
    assert result.plan.node("n1").args == {"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20"}
    assert result.usage == {"prompt_tokens": 300, "completion_tokens": 30, "total_tokens": 330}
    assert result.attempts[0].calls == 3 and result.validation.ok
    first, second = llm.calls[0], llm.calls[1]
    assert first["schema"]["properties"]["tools"]["items"]["enum"] == demo_catalog().names()
    assert set(second["schema"]["properties"]) == {"origin", "destination", "date", "max_price"}
    assert all(call["salt"] == "salt-a" for call in llm.calls)
    assert second["messages"][-1]["content"] == "n1 = search_flights. Arguments?"
    assert any(m["role"] == "assistant" for m in first["messages"])  # retrieved demonstrations as turns
    assert '"origin": "Shanghai"' in first["messages"][-1]["content"]  # structured intent


def test_retry_with_structured_error_then_success() -> None:
    past = '{"city": "Hangzhou", "date": "2020-01-01"}'
    llm = ScriptedLLM(['{"tools": ["get_weather"]}', past, '{"tools": ["get_weather"]}', WEATHER])
    result = run(service(llm), "Weather in Hangzhou on June 20?")
    assert result.path == "model_retry" and len(result.attempts) == 2
    assert result.attempts[0].error_layer == "rules" and "date_in_past" in result.attempts[0].error
    repair = llm.calls[2]["messages"][-1]["content"]
    assert "rejected" in repair and "date_in_past" in repair


def test_fallback_when_model_keeps_failing() -> None:
    llm = ScriptedLLM(['{"tools": ["get_weather"]', "{", "not json"])
    result = run(service(llm))
    assert result.path == "fallback" and len(result.attempts) == 3
    assert result.fallback_reason and "JSON" in result.fallback_reason
    assert [n.tool for n in result.plan.nodes] == ["search_flights", "get_weather"]


def test_non_retryable_engine_error_goes_straight_to_fallback() -> None:
    llm = ScriptedLLM([LLMRejected("grammar compile timeout", status=500)])
    result = run(service(llm))
    assert result.path == "fallback" and len(result.attempts) == 1
    assert result.attempts[0].error_layer == "engine"


def test_retryable_engine_error_is_retried() -> None:
    llm = ScriptedLLM([LLMUnavailable("down"), '{"tools": ["get_weather"]}', WEATHER])
    result = run(service(llm), "Weather in Hangzhou on June 20?")
    assert result.path == "model_retry"


def test_clear_failure_when_fallback_cannot_help() -> None:
    with pytest.raises(PlanningFailed, match="no fallback rule matched") as info:
        run(service(ScriptedLLM([])), "Sing me a song")
    assert len(info.value.attempts) == 3
    with pytest.raises(PlanningFailed, match="model path failed"):
        run(service(ScriptedLLM([]), fallback_enabled=False))


def test_cache_hit_is_tenant_scoped() -> None:
    llm = ScriptedLLM(['{"tools": ["get_weather"]}', WEATHER] * 2)
    svc = service(llm)
    assert run(svc, "Weather in Hangzhou on June 20?").path == "model"
    assert run(svc, "weather in hangzhou on june 20").path == "cache"
    assert run(svc, "Weather in Hangzhou on June 20?", tenant="tenantB").path == "model"
    assert isinstance(svc.cache, PlanCache) and (svc.cache.hits, svc.cache.misses) == (1, 2)


def test_request_catalog_in_openai_format() -> None:
    tools = [t for t in DEMO_TOOLS if t["function"]["name"] == "get_weather"]
    llm = ScriptedLLM(['{"tools": ["get_weather"]}', WEATHER])
    result = run(service(llm), "Weather in Hangzhou on June 20?", tools=tools)
    assert result.path == "model" and llm.calls[0]["schema"]["properties"]["tools"]["items"]["enum"] == ["get_weather"]
    assert "search_flights" not in llm.calls[0]["messages"][0]["content"]
    with pytest.raises(CatalogError):
        run(service(ScriptedLLM([])), tools=[{"type": "function", "function": {"name": "bad name"}}])


def test_replan_sees_summaries_only() -> None:
    llm = ScriptedLLM(['{"tools": ["get_weather"]}', WEATHER])
    plan = asyncio.run(service(llm).replan(REQUEST, "n2 timed out", {"n1": "3 flights; cheapest 620 CNY " + "x" * 500}))
    assert plan.ids() == ["n1"]
    prompt = llm.calls[0]["messages"][-1]["content"]
    assert "n2 timed out" in prompt and "cheapest 620 CNY" in prompt and "x" * 300 not in prompt


def test_unconstrained_baseline_parses_leniently() -> None:
    steps = {"steps": [{"tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}}]}
    llm = ScriptedLLM(["Here is the plan:\n```json\n" + json.dumps(steps) + "\n```"])
    result = run(service(llm, strategy="unconstrained"), "Weather in Hangzhou on June 20?")
    assert result.path == "model" and llm.calls[0]["schema"] is None


def test_skeleton_from_an_agreeing_demonstration_skips_stage_one_and_fixes_references() -> None:
    llm = ScriptedLLM([FLIGHT, WEATHER])
    result = run(service(llm, skeleton_agree_score=0.05))
    assert result.path == "model" and result.attempts[0].skeleton and result.attempts[0].calls == 2
    assert [n.tool for n in result.plan.nodes] == ["search_flights", "get_weather"]
    first = llm.calls[0]
    assert set(first["schema"]["properties"]) == {"origin", "destination", "date", "max_price"}
    assert first["messages"][-2] == {"role": "assistant", "content": '{"tools": ["search_flights", "get_weather"]}'}
    weather = llm.calls[1]["schema"]["properties"]
    assert weather["city"] == {"enum": ["Shanghai", "Hangzhou"]}  # the request's cities, no references
    assert weather["date"] == {"enum": ["2027-06-20"]}


def test_every_model_call_is_sized_to_its_grammar_worst_case() -> None:
    from planner.grammar import worst_case_chars

    llm = ScriptedLLM(['{"tools": ["search_flights", "get_weather"]}', FLIGHT, WEATHER])
    svc = service(llm)
    run(svc)
    for call in llm.calls:
        assert call["max_tokens"] >= worst_case_chars(call["schema"], svc.config.grammar) + 1

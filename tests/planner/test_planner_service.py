"""PlannerService with the scripted fake model (orchestration, not the model) and the hashing embedder."""

from __future__ import annotations

import asyncio
import json
from datetime import date
from typing import Any

import pytest

from planner.catalog import CatalogError
from planner.config import PlannerConfig
from planner.grammar_budget import worst_case_chars
from planner.llm import LLMRejected, LLMTimeout, LLMUnavailable
from planner.service import PlannerService, PlanningFailed
from planner.similarity import CachedEmbedder
from tests.fakes.llm import FakePlannerLLM
from tests.planner.helpers import DEMO_TOOLS, demo_catalog

REQUEST = "Find flights from Shanghai to Hangzhou on June 20 and the weather in Hangzhou."
FLIGHT = '{"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20", "max_price": null}'
WEATHER = '{"city": "Hangzhou", "date": "2027-06-20"}'


EMBEDDER: list[CachedEmbedder] = []


@pytest.fixture(autouse=True)
def _embedder(minilm: CachedEmbedder) -> None:
    EMBEDDER[:] = [minilm]


def service(llm: FakePlannerLLM, **overrides: Any) -> PlannerService:
    settings: dict[str, Any] = {
        "skeleton_agree_score": None,
        "skeleton_min_score": None,
        "skeleton_repeat_score": None,
        **overrides,
    }
    config = PlannerConfig(today=date(2026, 11, 30), **settings)
    return PlannerService.from_config(config, llm=llm, catalog=demo_catalog(), embedder=EMBEDDER[0])


def run(svc: PlannerService, request: str = REQUEST, tenant: str = "tenantA", **kw: Any) -> Any:
    return asyncio.run(svc.plan(request, tenant=tenant, cache_salt="salt-a", **kw))


def user_tool(name: str, props: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": list(props)},
        },
    }


def test_proposed_tools_and_model_written_arguments() -> None:
    llm = FakePlannerLLM(FLIGHT, WEATHER)
    result = run(service(llm))
    assert result.path == "model" and [n.tool for n in result.plan.nodes] == ["search_flights", "get_weather"]
    assert result.plan.node("n1").args == {"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20"}
    assert result.attempts[0].tools_from == "proposal" and result.attempts[0].calls == 2
    first = llm.history[0]
    assert set(result.attempts[0].grammars[0]["properties"]) == {"origin", "destination", "date"}  # no max_price
    assert set(first["schema"]["properties"]) == {"origin", "destination"}  # the decided date is not asked for
    assert first["messages"][-1]["content"].startswith('n1 = search_flights for "Find flights from Shanghai')
    assert "Suggested:" in first["messages"][-1]["content"]  # the drafted arguments, as a hint
    assert all(call["salt"] == "salt-a" for call in llm.history)
    assert result.selection["proposed"] == ["search_flights", "get_weather"]


def test_the_model_may_write_the_tool_sequence_itself() -> None:
    llm = FakePlannerLLM('{"tools": ["get_weather"]}', WEATHER)
    result = run(service(llm, tool_choice="model"), "Weather in Hangzhou on June 20?")
    assert result.path == "model" and result.attempts[0].tools_from == "model"
    shortlist = llm.history[0]["schema"]["properties"]["tools"]["items"]["enum"]
    assert shortlist == result.selection["shortlist"] and "get_weather" in shortlist
    assert len(shortlist) == 8 < len(demo_catalog())  # the embedding shortlist (prompt_max_tools)
    assert "-> get_weather" in llm.history[0]["messages"][-1]["content"]  # the proposal as a hint


def test_a_retry_changes_what_failed() -> None:
    past = '{"city": "Hangzhou", "date": {"other": "2020-01-01"}}'
    llm = FakePlannerLLM(past, WEATHER)
    result = run(service(llm), "Weather in Hangzhou on June 20 or June 21?")
    assert result.path == "model_retry" and len(result.attempts) == 2
    assert result.attempts[0].error_layer == "rules" and "date_in_past" in (result.attempts[0].error or "")
    assert result.attempts[1].grounding == "hybrid" and any("excluded 1" in c for c in result.attempts[1].changes)
    assert "2020-01-01" not in json.dumps(result.attempts[1].grammars[0]["properties"]["date"].get("anyOf", [{}])[0])
    assert "rejected" in llm.history[1]["messages"][-2]["content"] or "rejected" in llm.prompts[1]


def test_a_rejected_value_of_the_request_is_removed_and_the_grounding_kept() -> None:
    """The request names two dates; the model took the past one (a candidate) and a rule refused it: the
    retry keeps the same grounding without that value, so the model cannot write it again."""
    llm = FakePlannerLLM('{"city": "Hangzhou", "date": "2020-01-01"}', WEATHER)
    result = run(service(llm), "Weather in Hangzhou, on 2020-01-01 or else on June 20?")
    assert result.path == "model_retry" and result.attempts[0].error_layer == "rules"
    assert [a.grounding for a in result.attempts] == ["grounded", "grounded"]
    dates = json.dumps(result.attempts[1].grammars[0]["properties"]["date"])
    assert "2027-06-20" in dates and "2020-01-01" not in dates


def test_the_travel_pack_fallback_after_repeated_failures() -> None:
    llm = FakePlannerLLM("{", "not json", "{")
    result = run(service(llm))
    assert result.path == "fallback" and len(result.attempts) == 3
    assert result.fallback_reason and "JSON" in result.fallback_reason
    assert [n.tool for n in result.plan.nodes] == ["search_flights", "get_weather"]
    assert [a.grounding for a in result.attempts] == ["grounded", "strict", "strict"]  # a cut-off tightens


def test_the_generic_fallback_plans_any_catalog() -> None:
    tools = [user_tool("send_sms", {"phone_number": {"type": "string"}, "message": {"type": "string"}}, "Send an SMS")]
    # every argument decided by the request (the quote is the content `message` writes): no engine call
    llm = FakePlannerLLM()
    decided = run(service(llm), "Send an SMS saying 'on my way' to 555-123-4567", tools=tools)
    assert decided.path == "model" and llm.history == []
    assert decided.plan.node("n1").args == {"phone_number": "555-123-4567", "message": "on my way"}
    # an open argument the (fake) model fails to write: the rule-based planner still plans the catalog
    result = run(service(FakePlannerLLM()), "Send an SMS to 555-123-4567 saying running late", tools=tools)
    assert result.path == "fallback" and result.plan.node("n1").tool == "send_sms"
    assert result.plan.node("n1").args["phone_number"] == "555-123-4567"


@pytest.mark.parametrize("error", [LLMUnavailable("down"), LLMTimeout("slow")])
def test_engine_outages_are_not_planning_failures(error: Exception) -> None:
    with pytest.raises(type(error)):
        run(service(FakePlannerLLM(error)))


def test_a_refused_grammar_is_retried_with_free_values() -> None:
    llm = FakePlannerLLM(LLMRejected("grammar compile timeout", engine_status=400), WEATHER)
    result = run(service(llm), "Weather in Hangzhou on June 20?")
    assert result.path == "model_retry" and result.attempts[0].error_layer == "engine"
    assert result.attempts[1].grounding == "free"


def test_nothing_fits_is_an_answer_not_an_error() -> None:
    llm = FakePlannerLLM()
    result = run(service(llm, selection={"no_fit_below": 0.99}), "Hum a tune for me")
    assert result.plan is None and result.path == "no_plan" and "no tool" in (result.reason or "")
    assert llm.history == []
    empty = FakePlannerLLM('{"tools": []}')
    declined = run(service(empty, tool_choice="model"), "Weather in Hangzhou on June 20?")
    assert declined.plan is None and declined.path == "no_plan" and "the model chose no tool" in (declined.reason or "")


def test_a_users_own_date_argument_is_not_judged_by_travel_rules() -> None:
    tools = [user_tool("book_room", {"date": {"type": "string"}}, "Book a meeting room")]
    llm = FakePlannerLLM('{"date": "1/2/2023"}')
    result = run(service(llm), "Book a meeting room for 1/2/2023", tools=tools)
    assert result.path == "model" and result.plan.node("n1").args == {"date": "1/2/2023"}
    assert result.packs == []


def test_years_survive_into_the_grammar_in_iso_form() -> None:
    """A date argument that declares no format takes ISO 8601; the year the request writes is kept."""
    tools = [user_tool("log_day", {"day": {"type": "string"}}, "Log a day")]
    llm = FakePlannerLLM('{"day": "2021-03-03"}')
    result = run(service(llm), "Log the day March 3, 2021", tools=tools)
    offered = json.dumps(result.attempts[0].grammars[0])
    assert "2021-03-03" in offered and "2027-03-03" not in offered and "March 3, 2021" not in offered


def test_the_cache_keeps_every_character_that_changes_the_meaning() -> None:
    tools = [user_tool("calculate", {"expression": {"type": "string"}}, "Calculate an arithmetic expression")]
    llm = FakePlannerLLM(*['{"expression": "5-3"}', '{"expression": "5+3"}', '{"expression": "5-3"}'] * 2)
    svc = service(llm)
    assert run(svc, "Calculate 5-3", tools=tools).path == "model"
    assert run(svc, "Calculate 5+3", tools=tools).path == "model"
    assert run(svc, "  Calculate   5-3 ", tools=tools).path == "cache"
    assert run(svc, "Calculate 5-3", tenant="tenantB", tools=tools).path == "model"
    assert run(svc, "calculate 5-3", tools=tools).path != "cache"  # case is meaning (and is the model's call)


def test_request_catalog_in_openai_format_and_bad_tools() -> None:
    tools = [t for t in DEMO_TOOLS if t["function"]["name"] == "get_weather"]
    llm = FakePlannerLLM(WEATHER)
    result = run(service(llm), "Weather in Hangzhou on June 20?", tools=tools)
    assert result.path == "model" and "search_flights" not in llm.history[0]["messages"][0]["content"]
    with pytest.raises(CatalogError):
        run(service(FakePlannerLLM()), tools=[{"type": "function", "function": {"name": "bad name"}}])


def test_clear_failure_when_nothing_can_plan() -> None:
    tools = [user_tool("send_sms", {"phone_number": {"type": "string"}, "message": {"type": "string"}}, "Send an SMS")]
    with pytest.raises(PlanningFailed, match="model path failed"):
        run(service(FakePlannerLLM(), fallback_enabled=False), "Send an SMS to 555-123-4567", tools=tools)


def test_replan_sees_summaries_only() -> None:
    llm = FakePlannerLLM(WEATHER)
    svc = service(llm)
    plan = asyncio.run(svc.replan("Weather in Hangzhou on June 20?", "n2 timed out", {"n1": "3 flights " + "x" * 500}))
    assert plan.ids() == ["n1"]
    prompt = llm.prompts[0]
    assert "n2 timed out" in prompt and "3 flights" in prompt and "x" * 300 not in prompt


def test_unconstrained_baseline_parses_leniently() -> None:
    steps = {"steps": [{"tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}}]}
    llm = FakePlannerLLM("Here is the plan:\n```json\n" + json.dumps(steps) + "\n```")
    result = run(service(llm, strategy="unconstrained"), "Weather in Hangzhou on June 20?")
    assert result.path == "model" and llm.history[0]["schema"] is None


def test_a_pack_demonstration_agreeing_with_the_goals_is_reused_as_a_skeleton() -> None:
    llm = FakePlannerLLM(FLIGHT, WEATHER)
    result = run(service(llm, skeleton_agree_score=-1.0), REQUEST)
    assert result.attempts[0].tools_from == "skeleton"
    assert [n.tool for n in result.plan.nodes] == ["search_flights", "get_weather"]


def test_every_model_call_is_sized_to_its_grammar_worst_case() -> None:
    llm = FakePlannerLLM(FLIGHT, WEATHER)
    svc = service(llm)
    run(svc)
    for call in llm.history:
        assert call["max_tokens"] >= worst_case_chars(call["schema"], svc.config.grammar) + 1


def test_a_conversation_too_long_for_the_model_is_retried_without_examples() -> None:
    too_long = LLMRejected(
        "This model's maximum context length is 2048 tokens (parameter=input_tokens)", engine_status=400
    )
    llm = FakePlannerLLM(too_long, WEATHER)
    result = run(service(llm), "Weather in Hangzhou on June 20?")
    assert result.path == "model_retry"
    assert result.attempts[1].changes == ["no examples and shorter tool lines (the prompt was past the context length)"]
    first, second = llm.history[0]["messages"], llm.history[1]["messages"]
    assert len(first) > 4  # the travel pack's examples, as turns
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]  # request, tools, node
    assert len(second[0]["content"]) < len(first[0]["content"])  # shorter tool lines

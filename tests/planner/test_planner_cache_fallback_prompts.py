from __future__ import annotations

from datetime import date

import pytest

from planner.cache import PlanCache, normalise_request
from planner.config import PlannerConfig
from planner.demos import Demonstration, WordOverlapDemonstrations, load_demonstrations, usable
from planner.fallback import FallbackError, FallbackPlanner, FallbackRules
from planner.intent import IntentExtractor
from planner.prompts import PromptBook, example_turns
from planner.rules import BusinessRules
from planner.validation import PlanValidator
from tests.planner.helpers import demo_catalog, node, plan

TODAY = date(2026, 11, 30)
P = plan(node("n1", "get_weather", {"city": "Hangzhou", "date": "2027-06-20"}))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_normalise_request_folds_case_space_punctuation_keeps_numbers() -> None:
    assert normalise_request("  Weather in HANGZHOU,   June 20!! ") == "weather in hangzhou june 20"
    assert normalise_request("June 20") != normalise_request("June 21")


def test_cache_is_tenant_scoped() -> None:
    cache = PlanCache(ttl_s=60, max_entries=10)
    cache.put("tenantA", "Weather in Hangzhou", "h", P)
    assert cache.get("tenantA", "weather in hangzhou!", "h") == P
    assert cache.get("tenantB", "Weather in Hangzhou", "h") is None
    assert cache.get("tenantA", "Weather in Hangzhou", "other-catalog") is None
    assert (cache.hits, cache.misses) == (1, 2)


def test_cache_ttl_and_lru() -> None:
    clock = Clock()
    cache = PlanCache(ttl_s=10, max_entries=2, clock=clock)
    cache.put("t", "a", "h", P)
    cache.put("t", "b", "h", P)
    assert cache.get("t", "a", "h") == P  # a is now most recent
    cache.put("t", "c", "h", P)  # evicts b
    assert cache.get("t", "b", "h") is None and cache.evictions == 1
    clock.now = 11
    assert cache.get("t", "a", "h") is None and cache.expirations == 1
    stats = cache.stats()
    assert stats.size == 1 and stats.hits == 1


def test_disabled_cache_never_stores() -> None:
    cache = PlanCache(ttl_s=0, max_entries=10)
    cache.put("t", "a", "h", P)
    assert cache.get("t", "a", "h") is None and cache.stats().size == 0


@pytest.fixture
def rules() -> FallbackRules:
    return FallbackRules.from_yaml(PlannerConfig().fallback_rules_path)


def test_intent_extraction(rules: FallbackRules) -> None:
    intent = IntentExtractor(rules.goals, rules.cities, TODAY).extract(
        "Find flights from Shanghai to Hangzhou on June 20 and a family hotel near West Lake for 3 nights "
        "under 2000 CNY, and the weather."
    )
    assert set(intent.goals) >= {"flight", "hotel", "weather"}
    assert (intent.origin, intent.destination) == ("Shanghai", "Hangzhou")
    assert intent.dates == ("2027-06-20",) and intent.check_out == "2027-06-23"
    assert intent.budget == 2000 and intent.family and intent.near == "West Lake"


def test_fallback_plans_with_references_and_validates(rules: FallbackRules) -> None:
    catalog = demo_catalog()
    request = "Find a venue in Hangzhou for 50 people on 2027-06-20 with vegetarian catering, budget 30000 CNY."
    intent = IntentExtractor(rules.goals, rules.cities, TODAY).extract(request)
    result = FallbackPlanner(rules, max_nodes=6).plan(request, intent, catalog)
    assert [n.tool for n in result.nodes] == ["search_venues", "quote_catering", "check_budget"]
    assert result.node("n2").args["venue_id"] == "$n1.best.venue_id"
    assert result.node("n3").args == {"amounts": ["$n1.best.price", "$n2.total"], "limit": 30000.0}
    validator = PlanValidator(catalog, BusinessRules.from_yaml(PlannerConfig().rules_path, TODAY), max_nodes=6)
    assert validator.validate(result).ok


def test_fallback_fails_clearly_without_matching_rule(rules: FallbackRules) -> None:
    intent = IntentExtractor(rules.goals, rules.cities, TODAY).extract("Sing me a song")
    with pytest.raises(FallbackError, match="no fallback rule matched"):
        FallbackPlanner(rules, max_nodes=6).plan("Sing me a song", intent, demo_catalog())


def test_prompts_render_from_templates(rules: FallbackRules) -> None:
    config = PlannerConfig()
    book = PromptBook(config.prompts_dir, "v1")
    catalog = demo_catalog()
    system = book.system(catalog)
    assert "search_flights(origin: string, destination: string, date: string, max_price?: number)" in system
    assert "$n1.cheapest.price" in system  # $$ escape rendered
    demo = Demonstration(
        "Weather in Hangzhou on 2027-06-20",
        {"nodes": [node("n1", "get_weather", {"city": "Hangzhou", "date": "2027-06-20"})]},
    )
    intent = IntentExtractor(rules.goals, rules.cities, TODAY).extract(demo.request)
    turns = example_turns(book, [demo], [intent], catalog, oneshot=False)
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant"]
    assert turns[1]["content"] == '{"tools": ["get_weather"]}'
    assert turns[2]["content"] == "n1 = get_weather. Arguments?"
    with pytest.raises(FileNotFoundError):
        PromptBook(config.prompts_dir, "v999")


def test_demonstrations_search_and_filter() -> None:
    demos = load_demonstrations(PlannerConfig().demonstrations_path)
    assert len(demos) >= 30
    index = WordOverlapDemonstrations(demos + [Demonstration("private weather trick", {"nodes": []}, 0, "tenantB")])
    found = index.search("weather forecast in Suzhou", 3, tenant="tenantA")
    assert found and found[0].score >= found[-1].score and "get_weather" in found[0].tools()
    assert all(d.tenant is None for d in found)
    assert len(usable(demos, demo_catalog())) == len(demos)
    assert usable(demos, demo_catalog().subset(["get_weather"])) == [
        d for d in demos if set(d.tools()) == {"get_weather"}
    ]

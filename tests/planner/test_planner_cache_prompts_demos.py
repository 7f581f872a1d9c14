from __future__ import annotations

import pytest

from contract.demonstrations import Demonstration
from planner.cache import PlanCache, normalise_request
from planner.config import PlannerConfig
from planner.demos import EmbeddingDemonstrations, WordOverlapDemonstrations, usable
from planner.packs import load_packs
from planner.prompts import PromptBook, example_turns
from planner.similarity import CachedEmbedder
from tests.planner.helpers import demo_catalog, node, plan

P = plan(node("n1", "get_weather", {"city": "Hangzhou", "date": "2027-06-20"}))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_normalise_request_folds_only_whitespace() -> None:
    assert normalise_request("  Weather in\tHANGZHOU,   June 20!! ") == "Weather in HANGZHOU, June 20!!"
    for a, b in (("5-3", "5+3"), ("10 > 3", "10 < 3"), ("'Hello'", "Hello"), ("June 20", "June 21"), ("-5", "5")):
        assert normalise_request(a) != normalise_request(b)


def test_cache_is_tenant_catalog_and_planner_scoped() -> None:
    cache = PlanCache(ttl_s=60, max_entries=10)
    cache.put("tenantA", "Weather in Hangzhou", "h", P, "cfg1")
    assert cache.get("tenantA", " Weather  in Hangzhou ", "h", "cfg1") == P
    assert cache.get("tenantB", "Weather in Hangzhou", "h", "cfg1") is None
    assert cache.get("tenantA", "Weather in Hangzhou", "other-catalog", "cfg1") is None
    assert cache.get("tenantA", "Weather in Hangzhou", "h", "cfg2") is None  # another config or prompt version
    assert (cache.hits, cache.misses) == (1, 3)


def test_the_planner_fingerprint_changes_with_its_configuration() -> None:
    assert PlannerConfig().fingerprint() != PlannerConfig(grounding="free").fingerprint()
    assert PlannerConfig().fingerprint() == PlannerConfig(cache_ttl_s=5).fingerprint()


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
    assert cache.stats().size == 1


def test_disabled_cache_never_stores() -> None:
    cache = PlanCache(ttl_s=0, max_entries=10)
    cache.put("t", "a", "h", P)
    assert cache.get("t", "a", "h") is None and cache.stats().size == 0


def test_prompts_render_from_templates() -> None:
    config = PlannerConfig()
    book = PromptBook(config.prompts_dir, config.prompt_version)
    catalog = demo_catalog()
    system = book.system(catalog, grounding="grounded")
    assert "search_flights(origin: string, destination: string, date: string, max_price?: number)" in system
    assert "$n1.total" in system and '{"other": "..."}' in system  # $$ escape rendered; grounded rule shown
    assert '{"other"' not in book.system(catalog) and '{"ref": "$n1.total"}' in book.system(catalog)
    demo = Demonstration(
        "Weather in Hangzhou on 2027-06-20, then convert 100 USD to CNY",
        {
            "nodes": [
                node("n1", "get_weather", {"city": "Hangzhou", "date": "2027-06-20"}),
                node("n2", "convert_currency"),
            ]
        },
    )
    turns = example_turns(book, [demo], catalog, oneshot=False)
    assert [t["role"] for t in turns] == ["user", "assistant"] * 3
    assert 'Step 1: "Weather in Hangzhou on 2027-06-20" -> get_weather' in turns[0]["content"]
    assert turns[1]["content"] == '{"tools": ["get_weather", "convert_currency"]}'
    assert turns[2]["content"] == 'n1 = get_weather for "Weather in Hangzhou on 2027-06-20". Arguments?'
    assert turns[3]["content"] == '{"city": "Hangzhou", "date": "2027-06-20"}'
    with pytest.raises(FileNotFoundError):
        PromptBook(config.prompts_dir, "v999")


def test_demonstrations_search_filter_and_tenancy(minilm: CachedEmbedder) -> None:
    travel = load_packs(["travel"])[0]
    demos = list(travel.demonstrations())
    assert len(demos) >= 30
    private = Demonstration("private weather trick", {"nodes": []}, 0, "tenantB")
    for index in (WordOverlapDemonstrations([*demos, private]), EmbeddingDemonstrations([*demos, private], minilm)):
        found = index.search("weather forecast in Suzhou", 3, tenant="tenantA")
        assert found and found[0].score >= found[-1].score and "get_weather" in found[0].tools()
        assert all(d.tenant is None for d in found)
    assert len(usable(demos, demo_catalog())) == len(demos)
    assert usable(demos, demo_catalog().subset(["get_weather"])) == [
        d for d in demos if set(d.tools()) == {"get_weather"}
    ]

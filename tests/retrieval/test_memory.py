"""The tenant demonstration memory: FAISS per tenant, persisted, bounded, deduplicated, private."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from retrieval.config import RetrievalConfig
from retrieval.embedder import SentenceTransformerEmbedder
from retrieval.errors import InvalidDemonstrationError
from retrieval.knowledge import KnowledgeBase
from retrieval.memory import NewDemonstration, TenantMemory, demonstration_bytes
from retrieval.memory_config import LearningConfig
from retrieval.store import IndexStore
from tests.retrieval.fakes import HashingEmbedder


def plan(tool: str, **args: Any) -> dict[str, Any]:
    return {"nodes": [{"id": "n1", "tool": tool, "args": args}]}


FLIGHT = plan("search_flights", origin="Paris", destination="Rome")
HOTEL = plan("search_hotels", city="Berlin")
WEATHER = plan("get_weather", city="Oslo")


class Clock:
    def __init__(self) -> None:
        self.ticks = itertools.count(1000)

    def __call__(self) -> float:
        return float(next(self.ticks))


def memory(root: Path, embedder: Any, clock: Clock | None = None, **bounds: Any) -> TenantMemory:
    return TenantMemory(IndexStore(root), embedder, LearningConfig(**bounds), clock=clock or Clock())


def test_add_search_and_survive_a_restart(tmp_path: Path, real_embedder: SentenceTransformerEmbedder) -> None:
    mem = memory(tmp_path, real_embedder)
    mem.add("acme", "Book a flight from Paris to Rome next Monday", FLIGHT, origin="feedback")
    mem.add("acme", "Find a hotel in Berlin for three nights", HOTEL)
    best = mem.search("I need a plane ticket from Paris to Rome", 2, tenant="acme")
    assert [d.plan for d in best] == [FLIGHT, HOTEL] and best[0].score > best[1].score
    assert best[0].tenant == "acme" and 0 < best[0].score <= 1.0001

    restarted = memory(tmp_path, real_embedder)  # a new process: nothing in memory, everything on disk
    again = restarted.search("I need a plane ticket from Paris to Rome", 1, tenant="acme")
    assert again[0].plan == FLIGHT and again[0].score == pytest.approx(best[0].score, abs=1e-3)
    stored = restarted.demonstrations("acme")
    assert [d.origin for d in stored] == ["feedback", "import"] and all(d.id.startswith("demo_") for d in stored)
    assert (tmp_path / "tenants" / "acme" / "demonstrations" / "manifest.json").is_file()


def test_never_read_across_tenants(tmp_path: Path, embedder: HashingEmbedder) -> None:
    mem = memory(tmp_path, embedder)
    report = mem.add("acme", "acme secret offsite catering order", WEATHER)
    demo_id = report.added[0].demonstration.id
    assert mem.search("acme secret offsite catering order", 5, tenant="globex") == []
    assert mem.search("acme secret offsite catering order", 5, tenant=None) == []
    assert mem.get("globex", demo_id) is None and mem.demonstrations("globex") == []
    assert not mem.delete("globex", demo_id) and mem.get("acme", demo_id) is not None
    assert mem.usage("globex").count == 0 and mem.usage("acme").count == 1
    assert [p.name for p in (tmp_path / "tenants").iterdir()] == ["acme"]
    with pytest.raises(Exception, match="invalid tenant"):
        mem.search("x", 1, tenant="../acme")


def test_deduplicated_and_the_latest_plan_wins(tmp_path: Path, embedder: HashingEmbedder) -> None:
    mem = memory(tmp_path, embedder)
    first = mem.add("acme", "Weather in Oslo tomorrow", WEATHER).added[0]
    assert first.status == "added"
    same = mem.add("acme", "Weather  in Oslo\ttomorrow", WEATHER).added[0]
    assert same.status == "duplicate" and same.demonstration.id == first.demonstration.id
    corrected = plan("get_weather", city="Oslo", date="2027-01-02")
    updated = mem.add("acme", "Weather in Oslo tomorrow", corrected, origin="feedback").added[0]
    assert updated.status == "updated" and updated.demonstration.id == first.demonstration.id
    assert updated.demonstration.created_at == first.demonstration.created_at
    assert mem.usage("acme").count == 1
    assert mem.search("Weather in Oslo tomorrow", 3, tenant="acme")[0].plan == corrected
    batch = mem.add_many(
        "acme", [NewDemonstration("Hotel in Berlin", HOTEL), NewDemonstration("Hotel in Berlin", HOTEL)]
    )
    assert [a.status for a in batch.added] == ["added", "duplicate"] and mem.usage("acme").count == 2


def test_eviction_keeps_the_count_bound_and_drops_the_least_recently_retrieved(
    tmp_path: Path, embedder: HashingEmbedder
) -> None:
    mem = memory(tmp_path, embedder, max_demonstrations_per_tenant=3)
    ids = {}
    for text, p in (("alpha flight paris", FLIGHT), ("beta hotel berlin", HOTEL), ("gamma weather oslo", WEATHER)):
        ids[text] = mem.add("acme", text, p).added[0].demonstration.id
    assert mem.search("alpha flight paris", 1, tenant="acme")[0].plan == FLIGHT  # alpha is now the most recent
    report = mem.add("acme", "delta weather rome", plan("get_weather", city="Rome"))
    assert report.evicted == [ids["beta hotel berlin"]]  # retrieved never since it was added: the oldest use
    assert mem.usage("acme").count == 3
    for n in range(10):
        mem.add("acme", f"request number {n} about tools", plan("get_weather", city=f"City{n}"))
        assert mem.usage("acme").count <= 3
    assert memory(tmp_path, embedder).usage("acme").count == 3  # the bound holds on disk too


def test_eviction_keeps_the_byte_bound(tmp_path: Path, embedder: HashingEmbedder) -> None:
    size = demonstration_bytes("request 0 weather city", plan("get_weather", city="City0"))
    mem = memory(tmp_path, embedder, max_bytes_per_tenant=max(1024, 4 * size + 10))
    for n in range(40):
        mem.add("acme", f"request {n} weather city", plan("get_weather", city=f"City{n}"))
        usage = mem.usage("acme")
        assert usage.bytes <= usage.max_bytes
    assert 0 < mem.usage("acme").count < 40
    assert mem.search("request 39 weather city", 1, tenant="acme")[0].plan["nodes"][0]["args"]["city"] == "City39"


def test_text_is_bounded(tmp_path: Path, embedder: HashingEmbedder) -> None:
    mem = memory(tmp_path, embedder, max_request_chars=50, max_plan_bytes=200)
    with pytest.raises(InvalidDemonstrationError, match="longer than 50"):
        mem.add("acme", "x" * 51, WEATHER)
    with pytest.raises(InvalidDemonstrationError, match="limit is 200"):
        mem.add("acme", "big plan", plan("get_weather", city="y" * 300))
    with pytest.raises(InvalidDemonstrationError, match="at least one node"):
        mem.add("acme", "empty plan", {"nodes": []})
    with pytest.raises(InvalidDemonstrationError):  # one bad item in a batch: nothing stored
        mem.add_many("acme", [NewDemonstration("fine", WEATHER), NewDemonstration("", WEATHER)])
    assert mem.usage("acme").count == 0


def test_delete_get_list(tmp_path: Path, embedder: HashingEmbedder) -> None:
    mem = memory(tmp_path, embedder)
    a = mem.add("acme", "first request", FLIGHT).added[0].demonstration
    b = mem.add("acme", "second request", HOTEL).added[0].demonstration
    assert [d.id for d in mem.demonstrations("acme")] == [a.id, b.id]
    assert [d.id for d in mem.demonstrations("acme", limit=1, offset=1)] == [b.id]
    stored = mem.get("acme", a.id)
    assert stored is not None and stored.plan == FLIGHT
    assert mem.delete("acme", a.id) and not mem.delete("acme", a.id)
    assert memory(tmp_path, embedder).get("acme", a.id) is None


def test_retrieval_counters_are_flushed(tmp_path: Path, embedder: HashingEmbedder) -> None:
    mem = memory(tmp_path, embedder)
    demo_id = mem.add("acme", "weather in oslo", WEATHER).added[0].demonstration.id
    for _ in range(3):
        mem.search("weather in oslo", 1, tenant="acme")
    assert mem.flush() == 1 and mem.flush() == 0
    stored = memory(tmp_path, embedder).get("acme", demo_id)
    assert stored is not None and stored.uses == 3 and stored.last_used_at > stored.created_at


def test_two_processes_on_one_folder_lose_no_change(tmp_path: Path, embedder: HashingEmbedder) -> None:
    one, two = memory(tmp_path, embedder), memory(tmp_path, embedder)
    one.add("acme", "flight from paris", FLIGHT)
    two.add("acme", "hotel in berlin", HOTEL)  # reads one's save before writing its own
    one.add("acme", "weather in oslo", WEATHER)
    assert {d.request for d in two.demonstrations("acme")} == {
        "flight from paris",
        "hotel in berlin",
        "weather in oslo",
    }
    assert two.search("weather in oslo", 1, tenant="acme")[0].plan == WEATHER


def test_memory_is_not_knowledge(tmp_path: Path, embedder: HashingEmbedder) -> None:
    store = IndexStore(tmp_path, RetrievalConfig())
    TenantMemory(store, embedder, LearningConfig()).add("acme", "flight from paris", FLIGHT)
    assert KnowledgeBase(store, embedder).search("flight from paris", tenant="acme") == []


def test_a_damaged_memory_does_not_stop_planning(tmp_path: Path, embedder: HashingEmbedder) -> None:
    mem = memory(tmp_path, embedder)
    mem.add("acme", "flight from paris", FLIGHT)
    folder = tmp_path / "tenants" / "acme" / "demonstrations"
    for index_file in folder.glob("index.*.faiss"):
        index_file.write_bytes(b"garbage")
    assert memory(tmp_path, embedder).search("flight from paris", 1, tenant="acme") == []

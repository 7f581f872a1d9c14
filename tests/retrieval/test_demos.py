from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.demos import DemonstrationIndex, InMemoryDemonstrationIndex
from retrieval.embedder import SentenceTransformerEmbedder
from retrieval.store import CollectionRef, IndexStore
from tests.retrieval.fakes import HashingEmbedder

PLAN_FLIGHT = {"nodes": [{"id": "n1", "tool": "search_flights", "args": {"to": "Paris"}}], "edges": []}
PLAN_HOTEL = {"nodes": [{"id": "n1", "tool": "search_hotels", "args": {"city": "Berlin"}}], "edges": []}
PLAN_VENUE = {"nodes": [{"id": "n1", "tool": "lookup_knowledge", "args": {"query": "venue deposit"}}], "edges": []}


def _fill(index: DemonstrationIndex | InMemoryDemonstrationIndex) -> None:
    index.add("Book a flight from Amsterdam to Paris next Monday", PLAN_FLIGHT)
    index.add("Find a hotel in Berlin for three nights under the cap", PLAN_HOTEL)
    index.add("What deposit does the venue require for a wedding?", PLAN_VENUE, example_id="venue-1")


def test_embedded_demonstrations_add_search_persist(tmp_path: Path, real_embedder: SentenceTransformerEmbedder) -> None:
    store = IndexStore(tmp_path / "indexes")
    index = DemonstrationIndex(store, real_embedder)
    _fill(index)
    best = index.search("I need a plane ticket to Paris", k=2)
    assert best[0].plan == PLAN_FLIGHT and best[0].example_id.startswith("ex-") and len(best) == 2
    assert best[0].score > best[1].score
    assert index.search("deposit for a wedding venue", k=1)[0].example_id == "venue-1"

    # duplicate request: not stored twice, the first id is returned
    assert index.add("What deposit does the venue require for a wedding?", PLAN_FLIGHT) == "venue-1"
    assert len(index.search("anything", k=10)) == 3

    assert index.save() == 1
    reloaded = DemonstrationIndex(IndexStore(tmp_path / "indexes"), real_embedder)
    assert reloaded.search("hotel in Berlin", k=1)[0].plan == PLAN_HOTEL
    assert store.exists(CollectionRef("demonstrations"))


def test_tenant_demonstrations_are_private(tmp_path: Path, embedder: HashingEmbedder) -> None:
    index = DemonstrationIndex(IndexStore(tmp_path / "indexes"), embedder)
    _fill(index)
    index.add("Plan the acme offsite catering order", PLAN_VENUE, tenant="acme")
    index.save()
    query = "acme offsite catering order"
    assert index.search(query, k=1, tenant="acme")[0].request == "Plan the acme offsite catering order"
    assert all("acme" not in d.request for d in index.search(query, k=10))
    assert all("acme" not in d.request for d in index.search(query, k=10, tenant="globex"))
    assert index.remove("venue-1") and not index.remove("venue-1")
    assert all(d.example_id != "venue-1" for d in index.search("deposit venue wedding", k=10))


def test_demonstrations_do_not_leak_into_knowledge(tmp_path: Path, embedder: HashingEmbedder) -> None:
    from retrieval.knowledge import KnowledgeBase

    store = IndexStore(tmp_path / "indexes")
    index = DemonstrationIndex(store, embedder)
    _fill(index)
    index.save()
    assert KnowledgeBase(store, embedder).search("flight Paris") == []


def test_in_memory_index_word_overlap(tmp_path: Path) -> None:
    index = InMemoryDemonstrationIndex()
    _fill(index)
    best = index.search("hotel Berlin three nights", k=3)
    assert best[0].plan == PLAN_HOTEL and 0 < best[0].score <= 1
    assert index.search("zzz unrelated", k=3) == []
    assert index.add("find a HOTEL in  Berlin for three nights under the cap", PLAN_FLIGHT) != ""
    assert index.add("Find a hotel in Berlin for three nights under the cap", PLAN_FLIGHT) == best[0].example_id
    index.add("acme secret offsite", PLAN_VENUE, tenant="acme")
    assert all(d.request != "acme secret offsite" for d in index.search("acme secret offsite", k=10))
    assert index.search("acme secret offsite", k=1, tenant="acme")[0].request == "acme secret offsite"
    path = tmp_path / "demos.json"
    index.save(path)
    assert len(InMemoryDemonstrationIndex.load(path)) == len(index)
    with pytest.raises(ValueError):
        index.add("  ", PLAN_FLIGHT)

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.demos import InMemoryDemonstrationIndex

PLAN_FLIGHT = {"nodes": [{"id": "n1", "tool": "search_flights", "args": {"to": "Paris"}}], "edges": []}
PLAN_HOTEL = {"nodes": [{"id": "n1", "tool": "search_hotels", "args": {"city": "Berlin"}}], "edges": []}
PLAN_VENUE = {"nodes": [{"id": "n1", "tool": "lookup_knowledge", "args": {"query": "venue deposit"}}], "edges": []}


def _fill(index: InMemoryDemonstrationIndex) -> None:
    index.add("Book a flight from Amsterdam to Paris next Monday", PLAN_FLIGHT)
    index.add("Find a hotel in Berlin for three nights under the cap", PLAN_HOTEL)
    index.add("What deposit does the venue require for a wedding?", PLAN_VENUE, example_id="venue-1")


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

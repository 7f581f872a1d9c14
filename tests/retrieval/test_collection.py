from __future__ import annotations

import numpy as np
import pytest

from retrieval.collection import ChunkDraft, Collection, HnswParams, choose_index_type
from tests.retrieval.fakes import HashingEmbedder


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _fill(collection: Collection, n: int, *, docs: int = 10, seed: int = 0, prefix: str = "chunk") -> np.ndarray:
    vectors = _unit(np.random.default_rng(seed), n, collection.dim)
    drafts = [ChunkDraft(text=f"{prefix} {i}", source=f"doc{i % docs}.md", position=i) for i in range(n)]
    collection.add(drafts, vectors)
    return vectors


@pytest.mark.parametrize(
    ("requested", "count", "expected"),
    [("auto", 10, "flat"), ("auto", 100, "flat"), ("auto", 101, "hnsw"), ("flat", 10**6, "flat"), ("hnsw", 1, "hnsw")],
)
def test_choose_index_type(requested: str, count: int, expected: str) -> None:
    assert choose_index_type(requested, count, threshold=100) == expected  # type: ignore[arg-type]


def test_auto_switches_to_hnsw_above_threshold_and_keeps_results() -> None:
    c = Collection("c", dim=16, model_name="m", hnsw_threshold=50)
    vectors = _fill(c, 40)
    assert c.index_type == "flat"
    _fill(c, 30, seed=1, prefix="more")  # 70 chunks > 50
    assert c.index_type == "hnsw"
    hit = c.search(vectors[3], 1)[0][0]
    assert hit.record.text == "chunk 3" and hit.score == pytest.approx(1.0, abs=1e-5)
    forced = Collection("f", dim=16, model_name="m", index_type="flat", hnsw_threshold=5)
    _fill(forced, 40)
    assert forced.index_type == "flat"


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_add_search_delete(kind: str) -> None:
    c = Collection("c", dim=16, model_name="m", domain="travel", index_type=kind)  # type: ignore[arg-type]
    vectors = _fill(c, 100)
    assert len(c) == 100
    hits = c.search(vectors[:2], 3)
    assert [h[0].record.text for h in hits] == ["chunk 0", "chunk 1"]
    assert hits[0][0].record.domain == "travel" and hits[0][0].record.source == "doc0.md"
    assert hits[0][0].score >= hits[0][1].score >= hits[0][2].score

    assert c.delete_document("doc0.md") == 10
    assert len(c) == 90
    after = c.search(vectors[0], 5)[0]
    assert all(h.record.source != "doc0.md" for h in after) and len(after) == 5
    assert c.delete_document("doc0.md") == 0


def test_hnsw_deletes_are_filtered_then_compacted() -> None:
    c = Collection("c", dim=16, model_name="m", index_type="hnsw", hnsw=HnswParams(m=16, ef_search=32))
    vectors = _fill(c, 200, docs=50)
    c.delete_document("doc1.md")  # 4 of 200: tombstoned, filtered at search time
    assert c.search(vectors[1], 1)[0][0].record.source != "doc1.md"
    for d in range(2, 12):  # many more deletions: the index is rebuilt without the dead vectors
        c.delete_document(f"doc{d}.md")
    assert len(c) == 156
    assert c.search(vectors[40], 200)[0][0].record.text == "chunk 40"
    assert len(c.search(vectors[40], 200)[0]) == 156
    assert c.index_type == "hnsw"


def test_duplicate_chunks_are_not_stored_twice() -> None:
    c = Collection("c", dim=16, model_name="m")
    vectors = _unit(np.random.default_rng(0), 3, 16)
    result = c.add(
        [ChunkDraft("same  text", "a.md"), ChunkDraft("same text", "b.md"), ChunkDraft("other", "b.md")], vectors
    )
    assert len(result.added) == 2 and result.duplicates == 1  # whitespace-normalised hash
    again = c.add([ChunkDraft("same text", "c.md")], vectors[:1])
    assert again.added == [] and again.duplicates == 1
    assert len(c) == 2
    found = c.find_hash("same text")
    assert found is not None and found.source == "a.md"


def test_ids_are_stable_and_never_reused() -> None:
    c = Collection("c", dim=16, model_name="m")
    _fill(c, 10)
    c.delete_ids([0, 1])
    embedder = HashingEmbedder(dim=16)
    added = c.add([ChunkDraft("fresh", "x.md")], embedder.embed(["fresh"])).added
    assert added == [10]
    assert c.get(0) is None and c.get(2) is not None


def test_dimension_checks() -> None:
    c = Collection("c", dim=16, model_name="m")
    with pytest.raises(ValueError):
        c.add([ChunkDraft("a", "a.md")], np.zeros((1, 8), dtype=np.float32))
    with pytest.raises(ValueError):
        c.search(np.zeros((1, 8), dtype=np.float32), 1)
    assert c.search(np.zeros((1, 16), dtype=np.float32), 3) == [[]]

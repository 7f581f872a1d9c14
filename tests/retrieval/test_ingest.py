from __future__ import annotations

from pathlib import Path

from retrieval.build import build_collections, plan_build
from retrieval.collection import Collection
from retrieval.ingest import Ingestor
from retrieval.store import CollectionRef, IndexStore
from tests.retrieval.fakes import HashingEmbedder

DOC_V1 = "# Per diem\n\nDomestic trips pay 45 euros per day.\n\n## Partial days\n\nDeparture days pay 60 percent."
DOC_V2 = "# Per diem\n\nDomestic trips pay 50 euros per day.\n\n## Partial days\n\nDeparture days pay 60 percent."


def _collection(embedder: HashingEmbedder) -> Collection:
    return Collection("travel", dim=embedder.dim, model_name=embedder.name, domain="travel")


def test_add_unchanged_update_delete(embedder: HashingEmbedder) -> None:
    c = _collection(embedder)
    ingestor = Ingestor(embedder, chunk_size=200, chunk_overlap=0)
    first = ingestor.upsert(c, "travel/per-diem.md", DOC_V1)
    assert first.added == 2 and first.deleted == 0

    calls = len(embedder.calls)
    assert ingestor.upsert(c, "travel/per-diem.md", DOC_V1).unchanged
    assert len(embedder.calls) == calls  # nothing embedded for an unchanged document

    updated = ingestor.upsert(c, "travel/per-diem.md", DOC_V2)
    assert updated.deleted == 2 and updated.added == 2 and len(c) == 2
    assert embedder.calls[-1] == 2
    texts = [r.text for r in c.document_chunks("travel/per-diem.md")]
    assert any("50 euros" in t for t in texts) and not any("45 euros" in t for t in texts)

    assert c.delete_document("travel/per-diem.md") == 2
    assert len(c) == 0 and "travel/per-diem.md" not in c.documents()


def test_duplicate_text_in_other_document_is_skipped(embedder: HashingEmbedder) -> None:
    c = _collection(embedder)
    ingestor = Ingestor(embedder, chunk_size=200, chunk_overlap=0)
    ingestor.upsert(c, "a.md", DOC_V1)
    copy = ingestor.upsert(c, "b.md", DOC_V1)
    assert copy.added == 0 and copy.duplicates == 2 and len(c) == 2
    assert embedder.calls[-1] == 2  # the copy was not embedded: the call before was the original's


def test_many_documents_are_embedded_in_few_calls(embedder: HashingEmbedder) -> None:
    c = _collection(embedder)
    ingestor = Ingestor(embedder, chunk_size=200, chunk_overlap=0, embed_batch=64)
    docs = [(f"d{i}.md", f"# Doc {i}\n\nFact number {i} is unique.", None) for i in range(20)]
    seen: list[str] = []
    results = ingestor.upsert_many(c, docs, on_document=lambda r: seen.append(r.source))
    assert len(results) == 20 and len(c) == 20 and len(seen) == 20
    assert embedder.calls == [20]


def test_build_from_folder_one_collection_per_subfolder(tmp_path: Path, embedder: HashingEmbedder) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "travel").mkdir(parents=True)
    (corpus / "venues").mkdir()
    (corpus / "travel" / "per-diem.md").write_text(DOC_V1)
    (corpus / "venues" / "noise.md").write_text("# Noise\n\nMusic ends at 23:00.")
    (corpus / "readme.txt").write_text("General notes about the corpus.")
    (corpus / "venues" / "image.png").write_bytes(b"\x89PNG")
    assert sorted(plan_build(corpus)) == ["general", "travel", "venues"]

    store = IndexStore(tmp_path / "indexes")
    report = build_collections(store, embedder, corpus)
    assert sorted(str(c.ref) for c in report.collections) == ["general", "travel", "venues"]
    assert store.manifest(CollectionRef("travel")).domain == "travel"
    assert store.manifest(CollectionRef("general")).domain is None

    # incremental: one file changed, one removed
    (corpus / "travel" / "per-diem.md").write_text(DOC_V2)
    (corpus / "venues" / "noise.md").unlink()
    (corpus / "venues" / "deposit.md").write_text("# Deposit\n\nThe deposit is 30 percent.")
    again = {str(c.ref): c for c in build_collections(IndexStore(tmp_path / "indexes"), embedder, corpus).collections}
    assert again["general"].unchanged == 1 and again["general"].added == 0
    assert again["travel"].deleted == 2 and again["travel"].added == 2
    assert again["venues"].deleted == 1 and again["venues"].added == 1
    venues = IndexStore(tmp_path / "indexes").open(CollectionRef("venues"))
    assert set(venues.documents()) == {"venues/deposit.md"}


def test_build_single_collection(tmp_path: Path, embedder: HashingEmbedder) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "travel").mkdir(parents=True)
    (corpus / "travel" / "a.md").write_text("Alpha fact.")
    (corpus / "other").mkdir()
    (corpus / "other" / "b.md").write_text("Beta fact.")
    store = IndexStore(tmp_path / "indexes")
    only = build_collections(store, embedder, corpus, collection="travel")
    assert [str(c.ref) for c in only.collections] == ["travel"]
    merged = build_collections(store, embedder, corpus, collection="everything", tenant="acme")
    assert merged.collections[0].count == 2
    assert [str(r) for r in store.list(tenant="acme")] == ["travel", "acme/everything"]

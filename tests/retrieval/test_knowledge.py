"""The real model over the real demo corpus: the right passage for hand-written questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.build import build_collections
from retrieval.config import RetrievalConfig
from retrieval.embedder import SentenceTransformerEmbedder
from retrieval.errors import InvalidNameError
from retrieval.knowledge import KnowledgeBase
from retrieval.store import CollectionRef, IndexStore

QUESTIONS = [
    ("What is the nightly hotel limit in Paris?", "travel/hotel-caps.md", "Paris: 190 euros"),
    ("Can I fly business class on an 11 hour flight?", "travel/booking-class.md", "more than 9 hours"),
    ("What per-diem do I get for a day in Tokyo?", "travel/per-diem.md", "75 euros per day"),
    ("When must amplified music stop on a Saturday night?", "venues/noise.md", "00:30"),
    ("How many people fit in the Harbour Hall for a seated banquet?", "venues/capacity.md", "240"),
    ("At what temperature must hot food be held?", "catering/food-temperatures.md", "63 °C or above"),
    ("How long can buffet food stay out before it must be thrown away?", "catering/food-temperatures.md", "2 hours"),
    (
        "When do we need to confirm the final number of guests to the caterer?",
        "catering/headcount.md",
        "5 working days",
    ),
    ("What is the cap on the supplier's liability?", "contracts/limitation-of-liability.md", "100 percent of the fees"),
    ("Within how many days must a force majeure event be notified?", "contracts/force-majeure.md", "5 business days"),
    ("What interest is charged on late payments?", "contracts/payment-terms.md", "8 percentage points"),
    ("What is the fee for cancelling the venue 60 days before the event?", "venues/cancellation.md", "75 percent"),
]


@pytest.mark.parametrize(("question", "source", "phrase"), QUESTIONS, ids=[q[1] for q in QUESTIONS])
def test_right_passage_for_question(corpus_kb: KnowledgeBase, question: str, source: str, phrase: str) -> None:
    passages = corpus_kb.search(question, k=3)
    assert passages, "no passages"
    top = passages[0]
    assert top.source == source, [(p.source, round(p.score, 3)) for p in passages]
    assert phrase in top.text
    assert top.domain == source.split("/")[0]
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)


def test_passage_shape_and_domain_filter(corpus_kb: KnowledgeBase) -> None:
    passages = corpus_kb.search("cancellation fees", k=5, domain="contracts")
    assert len(passages) == 5
    assert {p.domain for p in passages} == {"contracts"}
    assert all(p.source.startswith("contracts/") and p.chunk_id.startswith("contracts:") for p in passages)
    assert all(-1.0 <= p.score <= 1.0 for p in passages)
    assert corpus_kb.search("cancellation fees", k=5, domain="astronomy") == []
    assert corpus_kb.search("   ", k=5) == [] and corpus_kb.search("x", k=0) == []
    with pytest.raises(InvalidNameError):
        corpus_kb.search("x", tenant="../other")


def test_private_collection_only_for_its_tenant(
    corpus_kb: KnowledgeBase, real_embedder: SentenceTransformerEmbedder, tmp_path: Path
) -> None:
    private = tmp_path / "acme-notes"
    private.mkdir()
    (private / "discount.md").write_text("# Acme discount\n\nAcme negotiated a 17 percent discount on Loft Room hire.")
    build_collections(corpus_kb.store, real_embedder, private, collection="notes", tenant="acme")
    question = "What discount does Acme get on the Loft Room?"

    mine = corpus_kb.search(question, k=3, tenant="acme")
    assert mine[0].source == "discount.md" and mine[0].chunk_id.startswith("acme/notes:")
    for tenant in (None, "globex"):
        assert all(p.source != "discount.md" for p in corpus_kb.search(question, k=50, tenant=tenant))
    assert CollectionRef("notes", "acme") not in corpus_kb.store.list(tenant="globex")


def test_from_home_uses_indexes_folder(tmp_path: Path, real_embedder: SentenceTransformerEmbedder) -> None:
    kb = KnowledgeBase.from_home(tmp_path, RetrievalConfig(), embedder=real_embedder)
    assert kb.store.root == tmp_path / "indexes"
    assert kb.search("anything") == []
    lazy = KnowledgeBase.from_home(tmp_path)
    assert isinstance(lazy.embedder, SentenceTransformerEmbedder) and lazy.embedder.name.endswith("all-MiniLM-L6-v2")


def test_real_embedder_vectors(real_embedder: SentenceTransformerEmbedder) -> None:
    vectors = real_embedder.embed(["one", "two words", "three words here"])
    assert vectors.shape == (3, 384) and str(vectors.dtype) == "float32"
    assert abs(float((vectors**2).sum(axis=1).max()) - 1.0) < 1e-4
    assert real_embedder.embed([]).shape == (0, 384)


def test_store_refuses_index_of_other_model(
    corpus_kb: KnowledgeBase, real_embedder: SentenceTransformerEmbedder
) -> None:
    from retrieval.errors import IndexMismatchError
    from tests.retrieval.fakes import HashingEmbedder

    other = KnowledgeBase(IndexStore(corpus_kb.store.root), HashingEmbedder(dim=384, name="another-model"))
    with pytest.raises(IndexMismatchError, match="rebuild with `planstack index build --collection"):
        other.search("hotel caps")

"""Fixtures of the retrieval tests: a tiny deterministic embedder, and the real model once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.build import build_collections, packaged_corpus_dir
from retrieval.config import RetrievalConfig
from retrieval.embedder import SentenceTransformerEmbedder
from retrieval.knowledge import KnowledgeBase
from retrieval.store import IndexStore
from tests.retrieval.fakes import HashingEmbedder


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def store(tmp_path: Path) -> IndexStore:
    return IndexStore(tmp_path / "indexes", RetrievalConfig())


@pytest.fixture(scope="session")
def real_embedder() -> SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the installed package, loaded once for the whole session."""
    model = SentenceTransformerEmbedder.from_config(RetrievalConfig())
    model.embed(["warm-up"])
    return model


@pytest.fixture(scope="session")
def corpus_kb(tmp_path_factory: pytest.TempPathFactory, real_embedder: SentenceTransformerEmbedder) -> KnowledgeBase:
    """The demo corpus built with the real model into a session-wide store."""
    store = IndexStore(tmp_path_factory.mktemp("home") / "indexes", RetrievalConfig())
    build_collections(store, real_embedder, packaged_corpus_dir())
    return KnowledgeBase(store, real_embedder)

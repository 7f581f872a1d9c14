"""planstack retrieval: embeddings, FAISS collections, ingestion and persistence.

Modules (one concept each): `embedder` (Embedder interface, sentence-transformers model),
`chunking` (Markdown/text → chunks), `collection` (FAISS index + chunk metadata), `store`
(on-disk persistence, integrity checks, tenant scoping), `ingest` and `build` (documents and
folders → collections), `knowledge` (KnowledgeBase for the executors' knowledge tool), `memory`
(each tenant's demonstration memory for the planner) and `memory_config` (its `learning:` settings),
`demos` (a model-free word-overlap index), `config` (RetrievalConfig).

The names below are importable from `retrieval` directly; they are loaded on first use, so that
importing the package costs nothing (no FAISS or torch at import time).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval.config import RetrievalConfig
    from retrieval.demos import Demonstration, InMemoryDemonstrationIndex
    from retrieval.embedder import Embedder, SentenceTransformerEmbedder
    from retrieval.errors import RetrievalError
    from retrieval.knowledge import KnowledgeBase, Passage
    from retrieval.memory import TenantMemory
    from retrieval.store import IndexStore

_EXPORTS = {
    "RetrievalConfig": "retrieval.config",
    "Demonstration": "retrieval.demos",
    "InMemoryDemonstrationIndex": "retrieval.demos",
    "Embedder": "retrieval.embedder",
    "SentenceTransformerEmbedder": "retrieval.embedder",
    "RetrievalError": "retrieval.errors",
    "KnowledgeBase": "retrieval.knowledge",
    "Passage": "retrieval.knowledge",
    "TenantMemory": "retrieval.memory",
    "IndexStore": "retrieval.store",
}
__all__ = [
    "Demonstration",
    "Embedder",
    "InMemoryDemonstrationIndex",
    "IndexStore",
    "KnowledgeBase",
    "Passage",
    "RetrievalConfig",
    "RetrievalError",
    "SentenceTransformerEmbedder",
    "TenantMemory",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'retrieval' has no attribute {name!r}")

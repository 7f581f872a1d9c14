"""The knowledge tool's backend: top-k passages, with source and score, for executors to cite."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from retrieval.config import RetrievalConfig, apply_search_threads
from retrieval.embedder import Embedder, SentenceTransformerEmbedder
from retrieval.errors import InvalidNameError
from retrieval.store import CollectionRef, IndexStore, validate_name


@dataclass(frozen=True, slots=True)
class Passage:
    text: str
    source: str  # document the passage comes from, e.g. "travel/per-diem.md"
    score: float  # cosine similarity to the query, higher is closer
    chunk_id: str  # "<collection>:<id>", or "<tenant>/<collection>:<id>" for a private collection
    domain: str | None


class KnowledgeBase:
    """Searches the shared collections plus, when a tenant is given, that tenant's private ones."""

    def __init__(
        self,
        store: IndexStore,
        embedder: Embedder,
        *,
        exclude: frozenset[str] | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        # collections that are not knowledge (the planner's demonstrations live in the same store)
        self.exclude = frozenset({store.config.demonstrations_collection}) if exclude is None else exclude

    @classmethod
    def from_home(
        cls, home: Path | str, config: RetrievalConfig | None = None, *, embedder: Embedder | None = None
    ) -> KnowledgeBase:
        """The knowledge base over `<home>/indexes`, with the configured embedder unless one is given.

        Also applies `config.faiss_threads` to the process (see `apply_search_threads`).
        """
        config = config or RetrievalConfig()
        apply_search_threads(config)
        store = IndexStore(Path(home) / "indexes", config)
        return cls(store, embedder or SentenceTransformerEmbedder.from_config(config))

    def collections(self, *, domain: str | None = None, tenant: str | None = None) -> list[CollectionRef]:
        refs = [r for r in self.store.list(tenant=tenant) if r.name not in self.exclude]
        if domain is None:
            return refs
        return [r for r in refs if self.store.manifest(r).domain in (domain, None)]

    def search(self, query: str, *, k: int = 5, domain: str | None = None, tenant: str | None = None) -> list[Passage]:
        """The k passages closest to `query`, best first, from shared and `tenant`'s collections."""
        if tenant is not None:
            validate_name(tenant, "tenant")
        if domain is not None and not domain.strip():
            raise InvalidNameError("domain must not be empty")
        if k <= 0 or not query.strip():
            return []
        refs = self.collections(domain=domain, tenant=tenant)
        if not refs:
            return []
        vector = self.embedder.embed([query])
        passages: list[Passage] = []
        for ref in refs:
            collection = self.store.open(ref, model_name=self.embedder.name, dim=self.embedder.dim)
            # a collection may mix domains: over-fetch, then keep the asked domain
            fetch = k if domain is None or collection.domain == domain else 4 * k
            for hit in collection.search(vector, fetch)[0]:
                record = hit.record
                if domain is not None and record.domain != domain:
                    continue
                passages.append(
                    Passage(
                        text=record.text,
                        source=record.source,
                        score=hit.score,
                        chunk_id=f"{ref}:{record.chunk_id}",
                        domain=record.domain,
                    )
                )
        passages.sort(key=lambda p: p.score, reverse=True)
        return passages[:k]

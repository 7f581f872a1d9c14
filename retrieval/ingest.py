"""Ingestion: documents → chunks → vectors → a collection, incrementally.

A document is identified by its `source` (a path relative to the corpus root, e.g.
"travel/per-diem.md"). Re-ingesting a source whose text is unchanged does nothing; a changed one
is re-indexed (its chunks deleted, the new ones added). Chunks whose text is already stored are
not embedded nor stored again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from retrieval.chunking import chunk_text
from retrieval.collection import ChunkDraft, Collection
from retrieval.embedder import Embedder

SUPPORTED_SUFFIXES = (".md", ".markdown", ".txt")


@dataclass(frozen=True, slots=True)
class IngestResult:
    source: str
    added: int = 0
    duplicates: int = 0
    deleted: int = 0
    unchanged: bool = False


def document_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(slots=True)
class _Pending:
    source: str
    digest: str
    drafts: list[ChunkDraft]
    deleted: int


class Ingestor:
    """Chunks and embeds documents into collections with the injected embedder.

    Chunks of several documents are embedded together (up to `embed_batch` per call), which is
    several times faster than one call per document.
    """

    def __init__(
        self, embedder: Embedder, *, chunk_size: int = 800, chunk_overlap: int = 120, embed_batch: int = 256
    ) -> None:
        self.embedder = embedder
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.embed_batch = embed_batch

    def upsert(
        self, collection: Collection, source: str, text: str, *, domain: str | None = None, force: bool = False
    ) -> IngestResult:
        """Add a document, or re-index it if its text changed since it was last ingested."""
        return self.upsert_many(collection, [(source, text, domain)], force=force)[0]

    def upsert_many(
        self,
        collection: Collection,
        documents: Iterable[tuple[str, str, str | None]],
        *,
        force: bool = False,
        on_document: Callable[[IngestResult], None] | None = None,
    ) -> list[IngestResult]:
        """`upsert` for (source, text, domain) triples; `on_document` is called as each is stored."""
        results: list[IngestResult] = []
        group: list[_Pending] = []

        def done(result: IngestResult) -> None:
            results.append(result)
            if on_document is not None:
                on_document(result)

        for source, text, domain in documents:
            digest = document_hash(text)
            if not force and collection.documents().get(source) == digest:
                done(IngestResult(source, unchanged=True))
                continue
            deleted = collection.delete_document(source)
            drafts = [
                ChunkDraft(text=c.text, source=source, position=c.position, heading=c.heading, domain=domain)
                for c in chunk_text(text, size=self.chunk_size, overlap=self.chunk_overlap)
            ]
            group.append(_Pending(source, digest, drafts, deleted))
            if sum(len(p.drafts) for p in group) >= self.embed_batch:
                for result in self._store(collection, group):
                    done(result)
                group = []
        for result in self._store(collection, group):
            done(result)
        return results

    def _store(self, collection: Collection, group: list[_Pending]) -> list[IngestResult]:
        fresh = [[d for d in p.drafts if collection.find_hash(d.text) is None] for p in group]
        texts = [d.text for drafts in fresh for d in drafts]
        vectors = self.embedder.embed(texts) if texts else None
        results: list[IngestResult] = []
        offset = 0
        for pending, drafts in zip(group, fresh, strict=True):
            added = collection.add(drafts, vectors[offset : offset + len(drafts)]) if vectors is not None else None
            offset += len(drafts)
            collection.set_document_hash(pending.source, pending.digest)
            n_added = len(added.added) if added is not None else 0
            results.append(
                IngestResult(
                    pending.source,
                    added=n_added,
                    duplicates=len(pending.drafts) - n_added,
                    deleted=pending.deleted,
                )
            )
        return results


def iter_documents(folder: Path) -> Iterator[tuple[str, Path]]:
    """(source, path) of the supported files under `folder`, sources relative to it, sorted."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix.lower() in SUPPORTED_SUFFIXES and not path.name.startswith("."):
            yield path.relative_to(folder).as_posix(), path


def read_document(path: Path) -> str:
    return path.read_text(encoding="utf-8")

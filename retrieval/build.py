"""Building collections from a corpus folder: one collection per top-level subfolder (its domain).

    corpus/travel/per-diem.md   -> collection "travel", domain "travel", source "travel/per-diem.md"
    corpus/notes.md             -> collection "general" (files directly under the root)

Builds are incremental: unchanged documents are skipped, changed ones re-indexed, documents that
disappeared from the folder deleted. A collection that is corrupt or was built with another
embedder is rebuilt from scratch, which is the fix the integrity errors point to.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.collection import Collection
from retrieval.embedder import Embedder
from retrieval.errors import CollectionNotFoundError, IndexCorruptError, IndexMismatchError
from retrieval.ingest import Ingestor, IngestResult, iter_documents, read_document
from retrieval.store import CollectionRef, IndexStore, validate_name

ROOT_COLLECTION = "general"


def packaged_corpus_dir() -> Path:
    """The demo corpus shipped with the package (travel, venues, catering, contracts)."""
    return Path(__file__).resolve().parent / "corpus"


@dataclass(slots=True)
class CollectionBuild:
    ref: CollectionRef
    documents: int = 0
    added: int = 0
    duplicates: int = 0
    deleted: int = 0
    unchanged: int = 0
    rebuilt_reason: str | None = None  # why the collection was rebuilt from scratch
    count: int = 0
    index_type: str = ""


@dataclass(slots=True)
class BuildReport:
    collections: list[CollectionBuild] = field(default_factory=list)


def plan_build(folder: Path, collection: str | None = None) -> dict[str, list[tuple[str, Path, str | None]]]:
    """collection name -> [(source, path, domain)] for the documents under `folder`.

    With `collection`: only the subfolder of that name if there is one, else everything in it.
    """
    if not folder.is_dir():
        raise CollectionNotFoundError(f"corpus folder {folder} does not exist")
    groups: dict[str, list[tuple[str, Path, str | None]]] = defaultdict(list)
    for source, path in iter_documents(folder):
        top = source.split("/", 1)[0] if "/" in source else None
        groups[top or ROOT_COLLECTION].append((source, path, top))
    if collection is None:
        for name in groups:
            validate_name(name)
        return dict(groups)
    validate_name(collection)
    if collection in groups:
        return {collection: groups[collection]}
    return {collection: [doc for docs in groups.values() for doc in docs]}


def build_collections(
    store: IndexStore,
    embedder: Embedder,
    folder: Path,
    *,
    collection: str | None = None,
    tenant: str | None = None,
    fresh: bool = False,
    prune: bool = True,
    on_document: Callable[[IngestResult], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
) -> BuildReport:
    """Ingest `folder` into collections of `store` and save them; see the module docstring."""
    cfg = store.config
    ingestor = Ingestor(
        embedder, chunk_size=cfg.chunk_size, chunk_overlap=cfg.chunk_overlap, embed_batch=4 * cfg.batch_size
    )
    plan = plan_build(folder, collection)
    if on_plan is not None:
        on_plan(sum(len(docs) for docs in plan.values()))
    report = BuildReport()
    for name, docs in plan.items():
        ref = store.ref(name, tenant)
        domains = {domain for _, _, domain in docs}
        domain = domains.pop() if len(domains) == 1 else None
        target, reason = _open_for_build(store, embedder, ref, domain, fresh)
        result = CollectionBuild(ref, documents=len(docs), rebuilt_reason=reason)
        outcomes = ingestor.upsert_many(
            target,
            ((source, read_document(path), doc_domain) for source, path, doc_domain in docs),
            on_document=on_document,
        )
        for outcome in outcomes:
            result.added += outcome.added
            result.duplicates += outcome.duplicates
            result.deleted += outcome.deleted
            result.unchanged += outcome.unchanged
        if prune:
            present = {source for source, _, _ in docs}
            for gone in set(target.documents()) - present:
                result.deleted += target.delete_document(gone)
        store.save(target)
        result.count, result.index_type = target.count, target.index_type
        report.collections.append(result)
    return report


def _open_for_build(
    store: IndexStore, embedder: Embedder, ref: CollectionRef, domain: str | None, fresh: bool
) -> tuple[Collection, str | None]:
    reason: str | None = "--fresh" if fresh and store.exists(ref) else None
    if store.exists(ref) and not fresh:
        try:
            return store.open(ref, model_name=embedder.name, dim=embedder.dim), None
        except (IndexCorruptError, IndexMismatchError) as exc:
            reason = exc.message
    # the first save of the new collection replaces the old files atomically
    return store.create(ref, dim=embedder.dim, model_name=embedder.name, domain=domain, replace=True), reason

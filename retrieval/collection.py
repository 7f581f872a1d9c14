"""A FAISS collection: vectors in an exact or HNSW inner-product index, ids mapped to chunk metadata.

The FAISS index holds vectors at consecutive positions; the collection maps each position to a
stable chunk id and each chunk id to its `ChunkRecord`. Deleting a chunk tombstones its position:
a flat index is compacted at once (cheap), an HNSW index (which cannot remove vectors) filters
tombstones at search time through an `IDSelector` and is rebuilt once a tenth of it is dead.
Vectors must be L2-normalised, so inner product is cosine similarity.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import faiss
import numpy as np

from retrieval.config import IndexType

ConcreteIndexType = Literal["flat", "hnsw"]
COMPACT_DEAD_FRACTION = 0.1


def content_hash(text: str) -> str:
    """SHA-256 of a text with runs of whitespace collapsed: the duplicate-detection key."""
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class HnswParams:
    m: int = 32
    ef_construction: int = 80
    ef_search: int = 64


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk to add; the collection gives it an id, its hash, domain and tenant."""

    text: str
    source: str
    position: int = 0
    heading: str = ""
    domain: str | None = None  # default: the collection's domain
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    chunk_id: int
    text: str
    source: str
    position: int
    domain: str | None
    tenant: str | None
    content_hash: str
    heading: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChunkRecord:
        return cls(**data)


@dataclass(frozen=True, slots=True)
class Hit:
    record: ChunkRecord
    score: float


@dataclass(frozen=True, slots=True)
class AddResult:
    added: list[int]  # ids of the new chunks
    duplicates: int  # drafts skipped because the same text is already stored (or repeated in the batch)


def choose_index_type(requested: IndexType, count: int, threshold: int) -> ConcreteIndexType:
    """`auto` is exact search up to `threshold` vectors and HNSW above it."""
    if requested != "auto":
        return requested
    return "hnsw" if count > threshold else "flat"


def new_faiss_index(kind: ConcreteIndexType, dim: int, hnsw: HnswParams) -> faiss.Index:
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    index = faiss.IndexHNSWFlat(dim, hnsw.m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = hnsw.ef_construction
    index.hnsw.efSearch = hnsw.ef_search
    return index


def index_kind(index: faiss.Index) -> ConcreteIndexType | None:
    index = faiss.downcast_index(index)
    if isinstance(index, faiss.IndexHNSWFlat):
        return "hnsw"
    if isinstance(index, faiss.IndexFlatIP):
        return "flat"
    return None


class Collection:
    """Chunks of one domain (shared) or of one tenant (private), searchable by vector."""

    def __init__(
        self,
        name: str,
        *,
        dim: int,
        model_name: str,
        domain: str | None = None,
        tenant: str | None = None,
        index_type: IndexType = "auto",
        hnsw_threshold: int = 20000,
        hnsw: HnswParams | None = None,
    ) -> None:
        self.name = name
        self.dim = dim
        self.model_name = model_name
        self.domain = domain
        self.tenant = tenant
        self.requested_index_type: IndexType = index_type
        self.hnsw_threshold = hnsw_threshold
        self.hnsw = hnsw or HnswParams()
        self._kind: ConcreteIndexType = choose_index_type(index_type, 0, hnsw_threshold)
        self._index = new_faiss_index(self._kind, dim, self.hnsw)
        self._labels: list[int] = []  # faiss position -> chunk id, -1 once deleted
        self._positions: dict[int, int] = {}  # chunk id -> faiss position
        self._records: dict[int, ChunkRecord] = {}
        self._by_hash: dict[str, int] = {}
        self._documents: dict[str, str] = {}  # source -> hash of the whole document text
        self._next_id = 0
        self._dead: np.ndarray | None = None  # cached tombstoned positions, for the HNSW selector
        self._lock = threading.RLock()

    # -- reading -----------------------------------------------------------------------------

    @property
    def index_type(self) -> ConcreteIndexType:
        return self._kind

    @property
    def count(self) -> int:
        return len(self._records)

    @property
    def next_id(self) -> int:
        return self._next_id

    def __len__(self) -> int:
        return len(self._records)

    def records(self) -> Iterator[ChunkRecord]:
        with self._lock:
            return iter(list(self._records.values()))

    def get(self, chunk_id: int) -> ChunkRecord | None:
        return self._records.get(chunk_id)

    def find_hash(self, text: str) -> ChunkRecord | None:
        chunk_id = self._by_hash.get(content_hash(text))
        return None if chunk_id is None else self._records[chunk_id]

    def documents(self) -> dict[str, str]:
        """source -> SHA-256 of the document text it was last ingested from."""
        with self._lock:
            return dict(self._documents)

    def document_chunks(self, source: str) -> list[ChunkRecord]:
        with self._lock:
            return sorted((r for r in self._records.values() if r.source == source), key=lambda r: r.position)

    def search(self, queries: np.ndarray, k: int) -> list[list[Hit]]:
        """Top-k hits per query row, best first; fewer when the collection is smaller."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if queries.shape[1] != self.dim:
            raise ValueError(f"query dimension {queries.shape[1]} != collection dimension {self.dim}")
        with self._lock:
            if not self._records or k <= 0:
                return [[] for _ in range(len(queries))]
            k_eff = min(k, len(self._labels))
            params = self._search_params(k_eff)
            scores, positions = self._index.search(queries, k_eff, params=params)
            return [
                [
                    Hit(self._records[self._labels[pos]], float(score))
                    for score, pos in zip(row_scores, row_pos, strict=True)
                    if pos >= 0 and self._labels[pos] >= 0
                ]
                for row_scores, row_pos in zip(scores, positions, strict=True)
            ]

    def _search_params(self, k: int) -> faiss.SearchParameters | None:
        if self._kind == "flat":
            return None  # a flat index is compacted on every delete
        params: Any = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]
        params.efSearch = max(self.hnsw.ef_search, k)
        if len(self._labels) > len(self._records):
            if self._dead is None:
                self._dead = np.flatnonzero(np.asarray(self._labels, dtype=np.int64) < 0).astype(np.int64)
            dead = self._dead
            # keep the selectors referenced from Python for as long as `params` lives
            batch = faiss.IDSelectorBatch(dead)
            params.sel = faiss.IDSelectorNot(batch)
            params.referenced_objects = [batch, params.sel]
        return params

    # -- writing -----------------------------------------------------------------------------

    def add(self, drafts: Sequence[ChunkDraft], vectors: np.ndarray) -> AddResult:
        """Add chunks with their vectors (row i is drafts[i]); texts already stored are skipped."""
        vectors = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        if len(drafts) and vectors.shape != (len(drafts), self.dim):
            raise ValueError(f"vectors of shape {vectors.shape} for {len(drafts)} chunks of dimension {self.dim}")
        with self._lock:
            keep: list[int] = []
            seen: set[str] = set()
            for i, draft in enumerate(drafts):
                digest = content_hash(draft.text)
                if digest in self._by_hash or digest in seen:
                    continue
                seen.add(digest)
                keep.append(i)
            added: list[int] = []
            for i in keep:
                draft = drafts[i]
                record = ChunkRecord(
                    chunk_id=self._next_id,
                    text=draft.text,
                    source=draft.source,
                    position=draft.position,
                    domain=draft.domain if draft.domain is not None else self.domain,
                    tenant=self.tenant,
                    content_hash=content_hash(draft.text),
                    heading=draft.heading,
                    extra=dict(draft.extra),
                )
                self._next_id += 1
                self._records[record.chunk_id] = record
                self._by_hash[record.content_hash] = record.chunk_id
                self._positions[record.chunk_id] = len(self._labels)
                self._labels.append(record.chunk_id)
                added.append(record.chunk_id)
            if keep:
                self._index.add(vectors[keep])
            self._maybe_rebuild()
            return AddResult(added=added, duplicates=len(drafts) - len(keep))

    def set_document_hash(self, source: str, digest: str) -> None:
        """Remember the hash of the text a document was ingested from (to skip unchanged re-ingests)."""
        with self._lock:
            self._documents[source] = digest

    def delete_ids(self, chunk_ids: Sequence[int]) -> int:
        with self._lock:
            deleted = 0
            for chunk_id in chunk_ids:
                record = self._records.pop(chunk_id, None)
                if record is None:
                    continue
                self._by_hash.pop(record.content_hash, None)
                self._labels[self._positions.pop(chunk_id)] = -1
                self._dead = None
                deleted += 1
            if deleted:
                self._maybe_rebuild()
            return deleted

    def update_extra(self, chunk_id: int, **changes: Any) -> ChunkRecord | None:
        """Change metadata of a stored chunk (its text and vector stay); None when it is gone."""
        with self._lock:
            record = self._records.get(chunk_id)
            if record is None:
                return None
            updated = replace(record, extra={**record.extra, **changes})
            self._records[chunk_id] = updated
            return updated

    def delete_document(self, source: str) -> int:
        """Delete every chunk of a document; returns how many were deleted."""
        with self._lock:
            self._documents.pop(source, None)
            return self.delete_ids([r.chunk_id for r in self._records.values() if r.source == source])

    def rebuild(self, index_type: IndexType | None = None) -> None:
        """Re-create the FAISS index from the live vectors (drops tombstones; may change the type)."""
        with self._lock:
            if index_type is not None:
                self.requested_index_type = index_type
            alive = [pos for pos, cid in enumerate(self._labels) if cid >= 0]
            vectors = self._index.reconstruct_n(0, self._index.ntotal) if self._index.ntotal else None
            self._kind = choose_index_type(self.requested_index_type, len(alive), self.hnsw_threshold)
            self._index = new_faiss_index(self._kind, self.dim, self.hnsw)
            if vectors is not None and alive:
                self._index.add(np.ascontiguousarray(vectors[alive]))
            self._labels = [self._labels[pos] for pos in alive]
            self._positions = {cid: pos for pos, cid in enumerate(self._labels)}
            self._dead = None

    def _maybe_rebuild(self) -> None:
        dead = len(self._labels) - len(self._records)
        wanted = choose_index_type(self.requested_index_type, len(self._records), self.hnsw_threshold)
        upgrade = wanted == "hnsw" and self._kind == "flat"  # auto never downgrades by itself
        if upgrade or (dead and self._kind == "flat") or dead > COMPACT_DEAD_FRACTION * len(self._labels):
            self.rebuild()

    # -- persistence (file handling lives in store.py) -------------------------------------------

    def export_state(self) -> tuple[bytes, dict[str, Any]]:
        """The serialised FAISS index and the JSON-able metadata that restore this collection."""
        with self._lock:
            index_bytes = faiss.serialize_index(self._index).tobytes()
            metadata = {
                "next_id": self._next_id,
                "labels": list(self._labels),
                "documents": dict(self._documents),
                "chunks": [r.to_json() for r in self._records.values()],
            }
            return index_bytes, metadata

    def import_state(self, index_bytes: bytes, metadata: dict[str, Any]) -> None:
        """Restore from `export_state` output; raises ValueError on any inconsistency."""
        # deserialize_index returns the concrete class; never re-wrap it (the wrapper owns the memory)
        index: Any = faiss.deserialize_index(np.frombuffer(index_bytes, dtype=np.uint8))
        kind = index_kind(index)
        if kind is None:
            raise ValueError(f"unsupported FAISS index class {type(faiss.downcast_index(index)).__name__}")
        if index.d != self.dim:
            raise ValueError(f"the index has dimension {index.d}, the manifest says {self.dim}")
        labels = [int(x) for x in metadata["labels"]]
        records = [ChunkRecord.from_json(c) for c in metadata["chunks"]]
        if index.ntotal != len(labels):
            raise ValueError(f"the index holds {index.ntotal} vectors but the metadata maps {len(labels)}")
        by_id = {r.chunk_id: r for r in records}
        alive = [cid for cid in labels if cid >= 0]
        if set(alive) != set(by_id) or len(alive) != len(set(alive)):
            raise ValueError("the index positions and the chunk metadata do not match")
        if kind == "hnsw":
            index.hnsw.efSearch = self.hnsw.ef_search
        with self._lock:
            self._kind = kind
            self._index = index
            self._labels = labels
            self._positions = {cid: pos for pos, cid in enumerate(labels) if cid >= 0}
            self._records = by_id
            self._by_hash = {r.content_hash: r.chunk_id for r in records}
            self._documents = {str(k): str(v) for k, v in metadata.get("documents", {}).items()}
            self._next_id = max(int(metadata["next_id"]), max(by_id, default=-1) + 1)
            self._dead = None

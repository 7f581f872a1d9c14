"""The planner's demonstration index: solved requests and their plans, retrieved as few-shot examples.

`DemonstrationIndex` embeds requests into collections of the same store as the knowledge (one
shared collection, plus one per tenant for private examples). `InMemoryDemonstrationIndex` has the
same interface, scores by word overlap and needs no embedding model: for tests, tiny deployments
and baselines (nearest-neighbour plan copy).
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from retrieval.atomic import atomic_write
from retrieval.collection import ChunkDraft, Collection, content_hash
from retrieval.embedder import Embedder
from retrieval.store import CollectionRef, IndexStore, validate_name

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "i",
        "in",
        "into",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "the",
        "to",
        "we",
        "with",
        "you",
    ]
)


@dataclass(frozen=True, slots=True)
class Demonstration:
    request: str
    plan: dict[str, Any]
    score: float
    example_id: str


class DemonstrationSource(Protocol):
    """What the planner needs from a demonstration index."""

    def add(
        self, request: str, plan: dict[str, Any], *, tenant: str | None = None, example_id: str | None = None
    ) -> str: ...

    def search(self, request: str, k: int = 3, *, tenant: str | None = None) -> list[Demonstration]: ...


def _example_id(request: str) -> str:
    return "ex-" + content_hash(request)[:16]


def _check_plan(plan: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(plan, dict):
        raise TypeError("a demonstration's plan must be a dict")
    return json.loads(json.dumps(plan))  # JSON-able, and a private copy


class DemonstrationIndex:
    """Embedded demonstrations, persisted in `store` under the collection `collection`."""

    def __init__(self, store: IndexStore, embedder: Embedder, *, collection: str | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.collection_name = validate_name(collection or store.config.demonstrations_collection)
        self._dirty: dict[CollectionRef, Collection] = {}
        self._lock = threading.Lock()

    def add(
        self, request: str, plan: dict[str, Any], *, tenant: str | None = None, example_id: str | None = None
    ) -> str:
        """Store a solved request; returns its example id (the existing one for a duplicate request)."""
        if not request.strip():
            raise ValueError("a demonstration needs a non-empty request")
        plan = _check_plan(plan)
        collection = self._collection(tenant, create=True)
        assert collection is not None
        with self._lock:
            existing = collection.find_hash(request)
            if existing is not None:
                return existing.source
            example_id = example_id or _example_id(request)
            collection.delete_document(example_id)  # the same id re-added replaces the old example
            draft = ChunkDraft(text=request, source=example_id, extra={"plan": plan})
            collection.add([draft], self.embedder.embed([request]))
            self._dirty[self.store.ref(self.collection_name, tenant)] = collection
            return example_id

    def remove(self, example_id: str, *, tenant: str | None = None) -> bool:
        collection = self._collection(tenant, create=False)
        if collection is None:
            return False
        with self._lock:
            removed = collection.delete_document(example_id) > 0
            if removed:
                self._dirty[self.store.ref(self.collection_name, tenant)] = collection
            return removed

    def search(self, request: str, k: int = 3, *, tenant: str | None = None) -> list[Demonstration]:
        """The k stored demonstrations closest to `request`: shared ones and `tenant`'s own."""
        if k <= 0 or not request.strip():
            return []
        owners = [None] if tenant is None else [None, tenant]
        collections = [c for c in (self._collection(owner) for owner in owners) if c is not None]
        if not any(len(c) for c in collections):
            return []
        vector = self.embedder.embed([request])
        found = [
            Demonstration(h.record.text, h.record.extra["plan"], h.score, h.record.source)
            for c in collections
            for h in c.search(vector, k)[0]
        ]
        found.sort(key=lambda d: d.score, reverse=True)
        return found[:k]

    def save(self) -> int:
        """Persist the collections changed since the last save; returns how many were written."""
        with self._lock:
            dirty, self._dirty = list(self._dirty.values()), {}
        for collection in dirty:
            self.store.save(collection)
        return len(dirty)

    def _collection(self, tenant: str | None, *, create: bool = False) -> Collection | None:
        ref = self.store.ref(self.collection_name, tenant)
        if create:
            return self.store.open_or_create(ref, dim=self.embedder.dim, model_name=self.embedder.name)
        with self._lock:
            if ref in self._dirty:
                return self._dirty[ref]
        if not self.store.exists(ref):
            return None
        return self.store.open(ref, model_name=self.embedder.name, dim=self.embedder.dim)


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS)


@dataclass(frozen=True, slots=True)
class _Entry:
    request: str
    plan: dict[str, Any]
    example_id: str
    tenant: str | None
    words: frozenset[str]


class InMemoryDemonstrationIndex:
    """Demonstrations scored by word overlap (cosine of word sets); no embedding model needed."""

    def __init__(self, demonstrations: Sequence[tuple[str, dict[str, Any]]] = ()) -> None:
        self._entries: dict[str, _Entry] = {}  # example id -> entry
        self._lock = threading.Lock()
        for request, plan in demonstrations:
            self.add(request, plan)

    def __len__(self) -> int:
        return len(self._entries)

    def add(
        self, request: str, plan: dict[str, Any], *, tenant: str | None = None, example_id: str | None = None
    ) -> str:
        if not request.strip():
            raise ValueError("a demonstration needs a non-empty request")
        if tenant is not None:
            validate_name(tenant, "tenant")
        plan = _check_plan(plan)
        digest = content_hash(request)
        with self._lock:
            for entry in self._entries.values():
                if entry.tenant == tenant and content_hash(entry.request) == digest:
                    return entry.example_id
            example_id = example_id or _example_id(request)
            self._entries[example_id] = _Entry(request, plan, example_id, tenant, _words(request))
            return example_id

    def search(self, request: str, k: int = 3, *, tenant: str | None = None) -> list[Demonstration]:
        query = _words(request)
        if k <= 0 or not query:
            return []
        with self._lock:
            entries = [e for e in self._entries.values() if e.tenant is None or e.tenant == tenant]
        scored = [
            Demonstration(e.request, e.plan, len(query & e.words) / math.sqrt(len(query) * len(e.words)), e.example_id)
            for e in entries
            if e.words
        ]
        scored.sort(key=lambda d: (-d.score, d.example_id))
        return [d for d in scored[:k] if d.score > 0]

    def save(self, path: Path) -> None:
        with self._lock:
            rows = [
                {"request": e.request, "plan": e.plan, "example_id": e.example_id, "tenant": e.tenant}
                for e in self._entries.values()
            ]
        atomic_write(path, json.dumps(rows, ensure_ascii=False, indent=1).encode())

    @classmethod
    def load(cls, path: Path) -> InMemoryDemonstrationIndex:
        index = cls()
        for row in json.loads(path.read_text(encoding="utf-8")):
            index.add(row["request"], row["plan"], tenant=row.get("tenant"), example_id=row.get("example_id"))
        return index

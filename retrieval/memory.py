"""Tenant demonstration memory: each tenant's solved requests and their plans, retrieved by the planner.

One FAISS collection per tenant, `<root>/tenants/<tenant>/<collection>/` in the retrieval store (its
atomic saves and checksummed manifests), request texts embedded with the packaged MiniLM. A chunk is
one demonstration: the request is its text, the plan and the bookkeeping sit in its metadata.

- Never read across tenants: every call names its tenant, whose id builds the only path it can reach;
  a search without a tenant finds nothing (shared examples are the domain packs').
- Deduplicated: one demonstration per request text (runs of whitespace collapsed). The same request
  with another plan replaces the plan and keeps the id: the latest correction wins.
- Bounded: at most `max_demonstrations_per_tenant` and `max_bytes_per_tenant` (request + plan bytes);
  past either the least recently retrieved demonstrations are evicted (never retrieved: oldest first).
- Durable: every change is saved before the call returns, so the memory survives a restart. The
  retrieval counters eviction goes by are written with the next change, on `flush()` (the gateway's
  shutdown) and at most every `usage_flush_s` from searches alone.
- Several processes on one folder (a shared volume): a change re-reads the collection when another
  process saved it meanwhile, under a file lock, so no replica's change overwrites another's; a
  search sees another process's save on its next call (the store reloads a changed manifest).

Calls are synchronous (FAISS, the embedding model, the disk): the planner and the gateway call them in
worker threads. Plans are stored as given: the caller validates them (serving/demonstrations.py).
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from contract.demonstrations import Demonstration
from contract.embedding import TextEmbedder
from retrieval.collection import ChunkDraft, ChunkRecord, Collection
from retrieval.embedder import Embedder
from retrieval.errors import InvalidDemonstrationError, RetrievalError
from retrieval.memory_config import LearningConfig
from retrieval.store import CollectionRef, IndexStore, validate_name

logger = logging.getLogger("planstack.retrieval.memory")
Origin = Literal["feedback", "import", "run"]
AddStatus = Literal["added", "updated", "duplicate"]
LOCK_FILE = ".memory.lock"
DEMO_ID_PATTERN = r"^demo_[0-9a-f]{20}$"


@dataclass(frozen=True)
class NewDemonstration:
    request: str
    plan: dict[str, Any]
    origin: Origin = "import"


@dataclass(frozen=True)
class StoredDemonstration:
    id: str
    request: str
    plan: dict[str, Any]
    origin: str
    created_at: float
    last_used_at: float
    uses: int
    bytes: int

    @classmethod
    def of(cls, record: ChunkRecord) -> StoredDemonstration:
        extra = record.extra
        return cls(
            id=record.source,
            request=record.text,
            plan=copy.deepcopy(extra["plan"]),
            origin=str(extra.get("origin", "import")),
            created_at=float(extra.get("created_at", 0.0)),
            last_used_at=float(extra.get("last_used_at", extra.get("created_at", 0.0))),
            uses=int(extra.get("uses", 0)),
            bytes=int(extra.get("bytes", 0)),
        )

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Added:
    demonstration: StoredDemonstration
    status: AddStatus


@dataclass(frozen=True)
class AddReport:
    added: list[Added]
    evicted: list[str]  # ids evicted to stay inside the bounds (the least recently retrieved first)


@dataclass(frozen=True)
class MemoryUsage:
    count: int
    bytes: int
    max_count: int
    max_bytes: int

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def demonstration_bytes(request: str, plan: dict[str, Any]) -> int:
    """What a demonstration costs against the tenant's byte budget: request + compact plan JSON."""
    return len(request.encode()) + len(json.dumps(plan, separators=(",", ":"), ensure_ascii=False).encode())


class TenantMemory:
    """The planner's `DemonstrationSource` over every tenant's own collection."""

    def __init__(
        self,
        store: IndexStore,
        model: Embedder,
        config: LearningConfig,
        *,
        vectors: TextEmbedder | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`model` names the embedder (checked against each collection's manifest); `vectors` embeds with it
        (the planner's cached embedder, so a request is embedded once for tools and demonstrations)."""
        self.store = store
        self.model = model
        self.config = config
        self.collection_name = validate_name(store.config.demonstrations_collection)
        self._vectors: TextEmbedder = vectors or model
        self._clock = clock
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._usage_since: dict[str, float] = {}  # tenant -> when its counters first changed unsaved

    # -- reading ---------------------------------------------------------------------------------

    def search(self, request: str, k: int, *, tenant: str | None) -> list[Demonstration]:
        """The k demonstrations of `tenant` nearest to `request` (cosine), best first."""
        if tenant is None or k <= 0 or not request.strip():
            return []
        self._ref(tenant)  # an invalid tenant id is the caller's error, not a damaged memory
        try:
            collection = self._open(tenant)
            if collection is None or not len(collection):
                return []
            hits = collection.search(self._vectors.embed([request]), k)[0]
        except RetrievalError as exc:  # a damaged or mismatched memory must not stop planning
            logger.error("tenant %s: demonstration memory unreadable: %s", tenant, exc)
            return []
        now = self._clock()
        for hit in hits:
            collection.update_extra(
                hit.record.chunk_id, last_used_at=now, uses=int(hit.record.extra.get("uses", 0)) + 1
            )
        if hits:
            self._usage_changed(tenant)
        return [
            Demonstration(h.record.text, copy.deepcopy(h.record.extra["plan"]), round(h.score, 4), tenant) for h in hits
        ]

    def get(self, tenant: str, demo_id: str) -> StoredDemonstration | None:
        collection = self._open(tenant)
        if collection is None:
            return None
        record = next((r for r in collection.records() if r.source == demo_id), None)
        return None if record is None else StoredDemonstration.of(record)

    def demonstrations(self, tenant: str, *, limit: int | None = None, offset: int = 0) -> list[StoredDemonstration]:
        """The tenant's demonstrations, oldest first."""
        collection = self._open(tenant)
        if collection is None:
            return []
        stored = sorted((StoredDemonstration.of(r) for r in collection.records()), key=lambda d: (d.created_at, d.id))
        return stored[offset : None if limit is None else offset + limit]

    def usage(self, tenant: str) -> MemoryUsage:
        collection = self._open(tenant)
        records = list(collection.records()) if collection is not None else []
        return MemoryUsage(
            len(records),
            sum(int(r.extra.get("bytes", 0)) for r in records),
            self.config.max_demonstrations_per_tenant,
            self.config.max_bytes_per_tenant,
        )

    # -- writing ---------------------------------------------------------------------------------

    def add(self, tenant: str, request: str, plan: dict[str, Any], *, origin: Origin = "import") -> AddReport:
        return self.add_many(tenant, [NewDemonstration(request, plan, origin)])

    def add_many(self, tenant: str, items: Sequence[NewDemonstration]) -> AddReport:
        """Store demonstrations (one save for all), then evict past the tenant's bounds. A demonstration
        over `max_request_chars` / `max_plan_bytes`, or larger than the whole budget, raises
        InvalidDemonstrationError and nothing is stored."""
        for item in items:
            self._check(item)
        if not items:
            return AddReport([], [])
        vectors = self._vectors.embed([item.request for item in items])
        with self._writing(tenant) as collection:
            added = [self._put(collection, item, vectors[i : i + 1]) for i, item in enumerate(items)]
            evicted = self._evict(collection)
            self.store.save(collection)
        return AddReport(added, evicted)

    def delete(self, tenant: str, demo_id: str) -> bool:
        if self._open(tenant) is None:
            return False
        with self._writing(tenant) as collection:
            ids = [r.chunk_id for r in collection.records() if r.source == demo_id]
            if not ids:
                return False
            collection.delete_ids(ids)
            self.store.save(collection)
            return True

    def flush(self) -> int:
        """Write the retrieval counters changed since the last save; returns how many tenants were saved."""
        with self._locks_guard:
            tenants = list(self._usage_since)
        for tenant in tenants:
            with self._writing(tenant) as collection:
                self.store.save(collection)
        return len(tenants)

    # -- internals -------------------------------------------------------------------------------

    def _ref(self, tenant: str) -> CollectionRef:
        return self.store.ref(self.collection_name, validate_name(tenant, "tenant"))

    def _open(self, tenant: str) -> Collection | None:
        ref = self._ref(tenant)
        if not self.store.exists(ref):
            return None
        return self.store.open(ref, model_name=self.model.name, dim=self.model.dim)

    @contextlib.contextmanager
    def _writing(self, tenant: str) -> Iterator[Collection]:
        """The tenant's collection, current on disk, for one change: one writer per tenant in this process
        (a lock) and across processes (a file lock next to the collection)."""
        ref = self._ref(tenant)
        folder = self.store.path(ref)
        folder.mkdir(parents=True, exist_ok=True)
        with self._lock_of(tenant), open(folder / LOCK_FILE, "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield self.store.open_or_create(ref, dim=self.model.dim, model_name=self.model.name)
                with self._locks_guard:
                    self._usage_since.pop(tenant, None)  # every save writes the counters too
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _lock_of(self, tenant: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(tenant, threading.Lock())

    def _check(self, item: NewDemonstration) -> None:
        config = self.config
        if not item.request.strip():
            raise InvalidDemonstrationError("a demonstration needs a non-empty request")
        if len(item.request) > config.max_request_chars:
            raise InvalidDemonstrationError(f"the request is longer than {config.max_request_chars} characters")
        if not isinstance(item.plan, dict) or not item.plan.get("nodes"):
            raise InvalidDemonstrationError("a demonstration needs a plan with at least one node")
        plan_bytes = demonstration_bytes("", item.plan)
        if plan_bytes > config.max_plan_bytes:
            raise InvalidDemonstrationError(f"the plan is {plan_bytes} bytes; the limit is {config.max_plan_bytes}")
        if demonstration_bytes(item.request, item.plan) > config.max_bytes_per_tenant:
            raise InvalidDemonstrationError("the demonstration is larger than the tenant's whole memory budget")

    def _put(self, collection: Collection, item: NewDemonstration, vector: Any) -> Added:
        now = self._clock()
        plan = json.loads(json.dumps(item.plan))  # JSON only, and a private copy
        existing = collection.find_hash(item.request)
        if existing is not None and existing.extra.get("plan") == plan:
            return Added(StoredDemonstration.of(existing), "duplicate")
        demo_id = existing.source if existing is not None else "demo_" + uuid.uuid4().hex[:20]
        created = float(existing.extra.get("created_at", now)) if existing is not None else now
        if existing is not None:
            collection.delete_ids([existing.chunk_id])
        extra = {
            "plan": plan,
            "origin": item.origin,
            "created_at": created,
            "last_used_at": now,
            "uses": 0,
            "bytes": demonstration_bytes(item.request, plan),
        }
        collection.add([ChunkDraft(text=item.request, source=demo_id, extra=extra)], vector)
        record = collection.find_hash(item.request)
        assert record is not None
        return Added(StoredDemonstration.of(record), "updated" if existing is not None else "added")

    def _evict(self, collection: Collection) -> list[str]:
        """Drop the least recently retrieved demonstrations until the collection is inside both bounds."""
        config = self.config
        records = sorted(
            collection.records(),
            key=lambda r: (float(r.extra.get("last_used_at", 0.0)), float(r.extra.get("created_at", 0.0)), r.chunk_id),
        )
        count = len(records)
        total = sum(int(r.extra.get("bytes", 0)) for r in records)
        victims: list[ChunkRecord] = []
        for record in records:
            if count <= config.max_demonstrations_per_tenant and total <= config.max_bytes_per_tenant:
                break
            victims.append(record)
            count -= 1
            total -= int(record.extra.get("bytes", 0))
        if victims:
            collection.delete_ids([r.chunk_id for r in victims])
        return [r.source for r in victims]

    def _usage_changed(self, tenant: str) -> None:
        now = self._clock()
        with self._locks_guard:
            since = self._usage_since.setdefault(tenant, now)
        if now - since >= self.config.usage_flush_s:
            with contextlib.suppress(RetrievalError, OSError), self._writing(tenant) as current:
                self.store.save(current)

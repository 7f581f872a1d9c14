"""A model-free demonstration index: solved requests scored by word overlap.

`InMemoryDemonstrationIndex` needs no embedding model: for tests, tiny deployments and the
benchmarks' nearest-neighbour baseline. Each tenant's own, persistent, FAISS-backed memory — what
the gateway's planner searches — is `retrieval.memory.TenantMemory`.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval.atomic import atomic_write
from retrieval.collection import content_hash
from retrieval.store import validate_name

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


def _example_id(request: str) -> str:
    return "ex-" + content_hash(request)[:16]


def _check_plan(plan: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(plan, dict):
        raise TypeError("a demonstration's plan must be a dict")
    return json.loads(json.dumps(plan))  # JSON-able, and a private copy


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

"""Text similarity for tool selection and demonstration retrieval.

The planner only needs `TextEmbedder.embed(texts) -> unit vectors`. The composition root injects the
packaged MiniLM (retrieval.embedder.SentenceTransformerEmbedder); `HashingEmbedder` is a
dependency-free stand-in (hashed word and character-trigram counts) for tests and for deployments
without the model. Vectors of tool texts are cached by text (bounded LRU), so a catalog is embedded
once; the work runs in a worker thread, never on the event loop.

The cache is scoped: inside `embedding_scope(tenant)` a text's vector is kept under that tenant only.
A cache shared between tenants told one tenant, through its own planning time (`timings.prepare_s`),
whether another had recently planned the exact same text.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

import numpy as np

from contract.embedding import TextEmbedder

_TOKEN = re.compile(r"[a-z0-9]+")
_scope: ContextVar[str] = ContextVar("planstack_embedding_scope", default="")


@contextlib.contextmanager
def embedding_scope(scope: str) -> Iterator[None]:
    """Vectors cached in this block (and the threads it starts with asyncio.to_thread) are keyed on
    `scope`, so another scope neither finds them nor learns from their timing that they exist."""
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)


class HashingEmbedder:
    """Bag of words + character trigrams hashed into `dim` buckets (no model; deterministic)."""

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                features = [token] + [token[i : i + 3] for i in range(max(1, len(token) - 2))]
                for feature in features:
                    bucket = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=4).digest(), "little")
                    out[row, bucket % self.dim] += 1.0 if feature == token else 0.3
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


class CachedEmbedder:
    """An embedder with an LRU of vectors by (scope, text); `aembed` runs the model in a worker thread.
    A text already being embedded for another caller (same scope) is waited for, not embedded again:
    four requests with the same 128 new tools run the model once, not four times in parallel."""

    def __init__(self, inner: TextEmbedder, *, max_entries: int = 8192) -> None:
        self.inner = inner
        self.max_entries = max_entries
        self._cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._pending: dict[tuple[str, str], threading.Event] = {}
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        scope = _scope.get()
        keys = [(scope, text) for text in dict.fromkeys(texts)]
        with self._lock:
            absent = [key for key in keys if key not in self._cache]
            others = {self._pending[key] for key in absent if key in self._pending}
            mine = [key for key in absent if key not in self._pending]
            done = threading.Event()
            self._pending.update((key, done) for key in mine)
        try:
            if mine:
                vectors = np.asarray(self.inner.embed([text for _, text in mine]), dtype=np.float32)
                with self._lock:
                    for key, vector in zip(mine, vectors, strict=True):
                        self._cache[key] = vector
                        self._cache.move_to_end(key)
                    while len(self._cache) > self.max_entries:
                        self._cache.popitem(last=False)
        finally:
            with self._lock:
                for key in mine:
                    self._pending.pop(key, None)
            done.set()
        for event in others:
            event.wait()
        with self._lock:
            found = {text: self._cache.get((scope, text)) for text in dict.fromkeys(texts)}
        rows = []
        for text in texts:
            vector = found[text]
            if vector is None:  # evicted meanwhile, or the other caller failed: embed it alone
                vector = found[text] = np.asarray(self.inner.embed([text]), dtype=np.float32)[0]
            rows.append(vector)
        return np.stack(rows) if rows else np.zeros((0, 1), dtype=np.float32)

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed, list(texts))

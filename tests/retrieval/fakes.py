"""Test doubles of the retrieval tests."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from retrieval.embedder import normalize_rows


class HashingEmbedder:
    """Bag of hashed words: texts sharing words are close. Fast and deterministic, for unit tests."""

    def __init__(self, dim: int = 64, name: str = "test-hashing") -> None:
        self.name = name
        self.dim = dim
        self.calls: list[int] = []  # number of texts per embed() call

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
                out[row, bucket % self.dim] += 1.0
            if not out[row].any():
                out[row, 0] = 1.0
        return normalize_rows(out)

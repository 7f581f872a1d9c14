"""Text embeddings: the one method the planner and the retrieval layer need of an embedding model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class TextEmbedder(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dim), float32 rows of unit L2 norm."""
        ...

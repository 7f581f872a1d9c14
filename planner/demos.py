"""Solved requests shown to the model as examples (retrieval-augmented planning).

`DemonstrationSource` is the interface every source implements (`retrieval.demos.DemonstrationIndex`,
FAISS, for large or tenant collections). `EmbeddingDemonstrations` ranks a small in-memory set (a
domain pack's examples) by cosine similarity of the packaged MiniLM embeddings, the measure the skeleton
thresholds are calibrated in; `WordOverlapDemonstrations` (Jaccard of content words) is the
model-free baseline used by tests and the nearest-copy benchmark baseline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from contract.demonstrations import Demonstration
from planner.catalog import ToolCatalog
from planner.lexicon import lexicon_for
from planner.similarity import CachedEmbedder

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    stop = lexicon_for(text).stopwords
    return {w for w in _WORD.findall(text.lower()) if w not in stop}


class WordOverlapDemonstrations:
    """Scores by Jaccard overlap of content words; tenant-specific demos are only seen by that tenant."""

    def __init__(self, demos: Sequence[Demonstration]) -> None:
        self.demos = list(demos)
        self._words = [words(d.request) for d in self.demos]

    @classmethod
    def from_jsonl(cls, path: Path) -> WordOverlapDemonstrations:
        return cls(load_demonstrations(path))

    def search(self, request: str, k: int, *, tenant: str | None) -> list[Demonstration]:
        query = words(request)
        scored = []
        for demo, demo_words in zip(self.demos, self._words, strict=True):
            if demo.tenant is not None and demo.tenant != tenant:
                continue
            union = query | demo_words
            score = len(query & demo_words) / len(union) if union else 0.0
            scored.append((score, demo))
        scored.sort(key=lambda pair: -pair[0])
        return [Demonstration(d.request, d.plan, round(s, 4), d.tenant) for s, d in scored[:k] if s > 0]


class EmbeddingDemonstrations:
    """Cosine similarity of request embeddings; demonstration vectors are embedded once, lazily."""

    def __init__(self, demos: Sequence[Demonstration], embedder: CachedEmbedder) -> None:
        self.demos = list(demos)
        self.embedder = embedder

    def search(self, request: str, k: int, *, tenant: str | None) -> list[Demonstration]:
        visible = [d for d in self.demos if d.tenant is None or d.tenant == tenant]
        if not visible or k <= 0:
            return []
        vectors = self.embedder.embed([request, *(d.request for d in visible)])
        scores = vectors[1:] @ vectors[0]
        order = sorted(range(len(visible)), key=lambda i: -float(scores[i]))[:k]
        return [
            Demonstration(visible[i].request, visible[i].plan, round(float(scores[i]), 4), visible[i].tenant)
            for i in order
        ]


def load_demonstrations(path: Path) -> list[Demonstration]:
    demos = []
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            demos.append(Demonstration(row["request"], row["plan"], 0.0, row.get("tenant")))
    return demos


def usable(demos: Iterable[Demonstration], catalog: ToolCatalog) -> list[Demonstration]:
    """Demonstrations whose every tool and argument name exists in the catalog."""
    kept = []
    for demo in demos:
        nodes = demo.plan.get("nodes", [])
        if nodes and all(
            node.get("tool") in catalog and set(node.get("args", {})) <= set(catalog.get(node["tool"]).properties)
            for node in nodes
        ):
            kept.append(demo)
    return kept


def choose_skeleton(
    found: Sequence[Demonstration], expected_tools: set[str], *, min_score: float | None, agree_score: float | None
) -> Demonstration | None:
    """The demonstration whose plan structure (tools + references) this request reuses, if any.

    The nearest one whose tool set is exactly what the intent's goals call for (when its similarity is
    at least `agree_score`), else the nearest one when its similarity is at least `min_score`.
    Thresholds are cosine similarities (planner/config.py says how they were chosen)."""
    if agree_score is not None and expected_tools:
        for demo in found:
            if demo.score >= agree_score and set(demo.tools()) == expected_tools:
                return demo
    if min_score is not None and found and found[0].score >= min_score:
        return found[0]
    return None


def skeleton_refs(demo: Demonstration) -> list[dict[str, Any]]:
    """Per node of a skeleton: the arguments whose value holds a reference, with that value."""
    out = []
    for node in demo.plan.get("nodes", []):
        out.append({k: v for k, v in node.get("args", {}).items() if _has_ref(v)})
    return out


def _has_ref(value: Any) -> bool:
    if isinstance(value, str):
        return value.startswith("$n")
    if isinstance(value, list):
        return any(_has_ref(v) for v in value)
    if isinstance(value, dict):
        return any(_has_ref(v) for v in value.values())
    return False

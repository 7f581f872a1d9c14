"""The harness's demonstration index: what the model sees as examples and what nearest-copy copies.

Backed by `retrieval.demos.InMemoryDemonstrationIndex` (word-overlap cosine, no embedding model) when
that module is importable, else by the planner's `WordOverlapDemonstrations`. It answers the planner's
`DemonstrationSource` protocol, grows with `add` (online mode), and can hide the request itself
(`leave_one_out`: a NESTFUL case never sees its own gold plan as an example).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contract.demonstrations import Demonstration
from planner.demos import WordOverlapDemonstrations


class ExampleIndex:
    def __init__(self, examples: Sequence[tuple[str, dict[str, Any]]] = (), *, leave_one_out: bool = False) -> None:
        self.leave_one_out = leave_one_out
        self._pairs: list[tuple[str, dict[str, Any]]] = []
        try:
            from retrieval.demos import InMemoryDemonstrationIndex
        except ImportError:
            self._index: Any = None
            self.backend = "planner.demos.WordOverlapDemonstrations"
        else:
            self._index = InMemoryDemonstrationIndex()
            self.backend = "retrieval.demos.InMemoryDemonstrationIndex"
        self._overlap = WordOverlapDemonstrations([])
        for request, plan in examples:
            self.add(request, plan)

    def __len__(self) -> int:
        return len(self._pairs)

    def add(self, request: str, plan: dict[str, Any]) -> None:
        self._pairs.append((request, plan))
        if self._index is not None:
            self._index.add(request, plan)
        else:
            self._overlap = WordOverlapDemonstrations([Demonstration(r, p) for r, p in self._pairs])

    def search(self, request: str, k: int, *, tenant: str | None = None) -> list[Demonstration]:
        extra = 1 if self.leave_one_out else 0
        if self._index is not None:
            found = [
                Demonstration(d.request, d.plan, round(d.score, 4)) for d in self._index.search(request, k + extra)
            ]
        else:
            found = self._overlap.search(request, k + extra, tenant=None)
        if self.leave_one_out:
            found = [d for d in found if d.request != request]
        return found[:k]

    def nearest_plan(self, request: str) -> dict[str, Any] | None:
        found = self.search(request, 1)
        return found[0].plan if found else None

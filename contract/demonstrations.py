"""Solved requests: what a demonstration source (a pack's examples, a tenant's memory) gives the planner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Demonstration:
    request: str
    plan: dict[str, Any]
    score: float = 0.0
    tenant: str | None = None

    def tools(self) -> list[str]:
        return [str(node.get("tool")) for node in self.plan.get("nodes", [])]


class DemonstrationSource(Protocol):
    def search(self, request: str, k: int, *, tenant: str | None) -> list[Demonstration]: ...

"""One problem found in a plan, in a form both people and the model can read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Issue:
    code: str
    message: str
    node: str | None = None
    path: str | None = None

    def as_dict(self) -> dict[str, Any]:
        fields = {"code": self.code, "message": self.message, "node": self.node, "path": self.path}
        return {k: v for k, v in fields.items() if v is not None}

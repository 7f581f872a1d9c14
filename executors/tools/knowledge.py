"""Knowledge tool `lookup_knowledge` and the `KnowledgeSearch` interface behind it.

retrieval/ provides the FAISS-backed implementation; until it is wired, `KeywordKnowledge` answers
from the short passages in `executors/data/knowledge.json` by word overlap. Any object with a
`search(query, *, k, domain, tenant)` method returning items with `text`, `source`, `score` fits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, Field

from executors.context import run_tenant
from executors.registry import ToolRegistry

Domain = Literal["travel", "venues", "catering", "contracts"]

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "i", "in", "is", "it", "of"}
    | {"on", "or", "the", "to", "what", "when", "where", "which", "with", "about"}
)


class PassageLike(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def score(self) -> float: ...


class KnowledgeSearch(Protocol):
    def search(
        self, query: str, *, k: int = 5, domain: str | None = None, tenant: str | None = None
    ) -> Sequence[PassageLike]: ...


@dataclass(frozen=True)
class Passage:
    text: str
    source: str
    score: float


class KeywordKnowledge:
    """Word-overlap search over a few passages: score = shared words / query words (stop words out)."""

    def __init__(self, passages: list[dict[str, Any]]) -> None:
        self._passages = [(p, _words(p["text"]) | _words(p["source"])) for p in passages]

    def search(self, query: str, *, k: int = 5, domain: str | None = None, tenant: str | None = None) -> list[Passage]:
        wanted = _words(query)
        if not wanted:
            return []
        scored = []
        for passage, words in self._passages:
            if domain is not None and passage.get("domain") != domain:
                continue
            overlap = len(wanted & words)
            if overlap:
                scored.append(Passage(passage["text"], passage["source"], round(overlap / len(wanted), 4)))
        scored.sort(key=lambda p: (-p.score, p.source))
        return scored[:k]


class PassageOut(BaseModel):
    text: str
    source: str
    score: float


class KnowledgeAnswer(BaseModel):
    passages: list[PassageOut] = Field(description="Best passages first.")
    top: str = Field(description='Text of the best passage; "" when nothing matched.')


def register_knowledge(registry: ToolRegistry, knowledge: KnowledgeSearch) -> None:
    @registry.tool(version="1", timeout_s=15, retries=3, concurrency_class="knowledge")
    def lookup_knowledge(
        query: Annotated[str, Field(min_length=1, max_length=500, description="What to look up.")],
        domain: Annotated[Domain | None, Field(description="Restrict to one collection.")] = None,
    ) -> KnowledgeAnswer:
        """Look up short passages in the knowledge base (travel tips, venues, catering, contract terms)."""
        found = knowledge.search(query, k=3, domain=domain, tenant=run_tenant())
        passages = [PassageOut(text=p.text, source=p.source, score=float(p.score)) for p in found]
        return KnowledgeAnswer(passages=passages, top=passages[0].text if passages else "")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in _STOPWORDS and len(w) > 1}

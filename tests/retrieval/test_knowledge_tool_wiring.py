"""The executors' lookup_knowledge tool answers from the FAISS knowledge base once it is built."""

from __future__ import annotations

from pathlib import Path

from executors.tools import default_registry
from retrieval.knowledge import KnowledgeBase
from serving.settings import Settings
from serving.stack import knowledge_for


def test_stack_uses_the_knowledge_base_only_once_an_index_is_built(tmp_path: Path, corpus_kb: KnowledgeBase) -> None:
    assert knowledge_for(Settings(home=tmp_path)) is None  # nothing built: the tools keep their keyword search
    built_home = Path(corpus_kb.store.root).parent
    assert isinstance(knowledge_for(Settings(home=built_home)), KnowledgeBase)


def test_lookup_knowledge_cites_corpus_passages(corpus_kb: KnowledgeBase) -> None:
    registry = default_registry(knowledge=corpus_kb)
    spec = next(spec for spec in registry.catalog() if spec.name == "lookup_knowledge")
    answer = spec.func(query="At what temperature must hot food be held?", domain="catering")
    data = answer.model_dump() if hasattr(answer, "model_dump") else answer
    assert data["passages"] and data["passages"][0]["source"].startswith("catering/")
    assert "63" in data["top"]

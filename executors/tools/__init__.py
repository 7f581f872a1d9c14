"""The demo tools of docs/demo-catalog.md, on the data shipped in `executors/data/`.

    registry = default_registry()                      # keyword knowledge fallback
    registry = default_registry(knowledge=faiss_search)  # retrieval/'s index behind KnowledgeSearch

To add a tool: write a typed function in the module of its area, decorate it with
`@registry.tool(...)` inside that module's `register_*` function, and document it in the catalog.
"""

from __future__ import annotations

from pathlib import Path

from executors.registry import ToolRegistry
from executors.tools.data import DemoData, load_demo_data
from executors.tools.events import register_events
from executors.tools.finance import register_finance
from executors.tools.knowledge import KeywordKnowledge, KnowledgeSearch, Passage, register_knowledge
from executors.tools.review import register_review
from executors.tools.travel import register_travel

__all__ = ["KeywordKnowledge", "KnowledgeSearch", "Passage", "default_registry", "load_demo_data"]


def default_registry(
    knowledge: KnowledgeSearch | None = None, *, data_dir: Path | None = None, data: DemoData | None = None
) -> ToolRegistry:
    """A new registry holding every demo tool."""
    demo = data or load_demo_data(data_dir)
    registry = ToolRegistry()
    register_travel(registry, demo)
    register_events(registry, demo)
    register_finance(registry, demo)
    register_knowledge(registry, knowledge or KeywordKnowledge(demo.knowledge))
    register_review(registry, demo)
    return registry

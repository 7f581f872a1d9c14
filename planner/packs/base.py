"""What a domain pack adds to the domain-free planner, and when it applies.

A pack bundles a domain's planning knowledge: the tools it knows (by name and argument names), values
its tools' arguments should be offered first (normalised dates, cities...), business rules bound to
those tools, a rule-based fallback planner, the tool set a request's goal calls for (to agree with a
retrieved skeleton), solved demonstrations, and a structured intent shown to the model. The planner
core asks each configured pack `applies(catalog)` per request: a pack whose tools are not in the
request's catalog contributes nothing, so a user's own tools are never judged by another domain's rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from contract.demonstrations import Demonstration
from contract.plan import Plan
from planner.catalog import ToolCatalog, ToolDef


class DomainPack:
    """Base class: a pack that knows `tools` (name → argument names) and adds nothing else."""

    name = "base"

    def __init__(self, tools: Mapping[str, frozenset[str]]) -> None:
        self.tools = dict(tools)

    def tools_in(self, catalog: ToolCatalog) -> set[str]:
        """The pack's tools present in `catalog` with the same argument names."""
        return {
            tool.name
            for tool in catalog
            if tool.name in self.tools and frozenset(tool.properties) == self.tools[tool.name]
        }

    def applies(self, catalog: ToolCatalog) -> bool:
        return bool(self.tools_in(catalog))

    def intent(self, request: str, today: date) -> dict[str, Any]:
        """Structured slots shown to the model next to the request (empty: nothing shown)."""
        return {}

    def preferred_values(self, request: str, tool: ToolDef, today: date) -> dict[str, list[Any]]:
        """Argument → values to offer before the generic request values (only for the pack's tools)."""
        return {}

    def expected_tools(self, request: str, catalog: ToolCatalog, today: date) -> set[str]:
        """The tools the request's goals call for (empty: no opinion)."""
        return set()

    def business_rules(self) -> list[dict[str, Any]]:
        return []

    def fallback_plan(self, request: str, catalog: ToolCatalog, today: date) -> Plan | None:
        """A rule-based plan, or None when the pack's rules do not cover the request."""
        return None

    def demonstrations(self) -> Sequence[Demonstration]:
        return ()

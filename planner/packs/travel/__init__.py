"""The travel/meeting demo pack: the demo tools' value kinds, business rules, fallback rules, examples.

Applies only when the request's catalog holds the demo tools (same names and argument names, e.g. the
executors' default registry). Its data lives in configs/packs/travel/: `catalog.json` (the tools it
knows), `slots.yaml` (argument name → kind of value), `rules.yaml` (business rules, each bound to its
tools), `fallback_rules.yaml` (goal keywords, city list and the rule-based planner), and
`demonstrations.jsonl` (solved requests).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from typing import Any

import yaml

from contract.demonstrations import Demonstration
from contract.plan import Plan
from planner.catalog import ToolCatalog, ToolDef
from planner.config import CONFIG_DIR
from planner.demos import load_demonstrations
from planner.packs.base import DomainPack
from planner.packs.travel.fallback import FallbackError, FallbackPlanner, FallbackRules
from planner.packs.travel.intent import Intent, IntentExtractor
from planner.packs.travel.values import SlotKinds, extract_values

PACK_DIR = CONFIG_DIR / "packs" / "travel"


class TravelPack(DomainPack):
    name = "travel"

    def __init__(self) -> None:
        tools = json.loads((PACK_DIR / "catalog.json").read_text())
        super().__init__(
            {t["function"]["name"]: frozenset(t["function"]["parameters"].get("properties", {})) for t in tools}
        )
        self.fallback_rules = FallbackRules.from_yaml(PACK_DIR / "fallback_rules.yaml")
        self.planner = FallbackPlanner(self.fallback_rules, max_nodes=20)
        self.kinds = SlotKinds.from_yaml(PACK_DIR / "slots.yaml")
        self._rules = list((yaml.safe_load((PACK_DIR / "rules.yaml").read_text()) or {}).get("rules", []))
        self._demos = load_demonstrations(PACK_DIR / "demonstrations.jsonl")

    def _intent(self, request: str, today: date) -> Intent:
        rules = self.fallback_rules
        return IntentExtractor(rules.goals, rules.cities, today, rules.city_aliases).extract(request)

    def intent(self, request: str, today: date) -> dict[str, Any]:
        return self._intent(request, today).as_dict()

    def preferred_values(self, request: str, tool: ToolDef, today: date) -> dict[str, list[Any]]:
        if tool.name not in self.tools:
            return {}
        slots = extract_values(request, self._intent(request, today), self.kinds, today)
        out: dict[str, list[Any]] = {}
        for name, schema in tool.properties.items():
            kind = schema.get("type") if isinstance(schema, dict) else None
            if kind in ("number", "integer"):
                out[name] = list(slots.numbers())
            elif kind == "string":
                out[name] = slots.strings(name)[1]
        return out

    def expected_tools(self, request: str, catalog: ToolCatalog, today: date) -> set[str]:
        return self.planner.tools_for(self._intent(request, today), catalog)

    def business_rules(self) -> list[dict[str, Any]]:
        return list(self._rules)

    def fallback_plan(self, request: str, catalog: ToolCatalog, today: date) -> Plan | None:
        try:
            return self.planner.plan(request, self._intent(request, today), catalog)
        except FallbackError:
            return None

    def demonstrations(self) -> Sequence[Demonstration]:
        return self._demos

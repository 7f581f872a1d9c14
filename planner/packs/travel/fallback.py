"""Rule-based fallback planner: keyword goals + intent slots → a plan, from fallback_rules.yaml.

Used only after the model path failed (and reported as `path == "fallback"`, never as model accuracy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from contract.errors import PlanstackBaseError
from contract.plan import Plan
from planner.catalog import ToolCatalog
from planner.packs.travel.intent import Intent


class FallbackError(PlanstackBaseError):
    """The travel rules have no plan for the request; the planner reports it inside `PlanningFailed`."""


@dataclass(frozen=True)
class FallbackRules:
    goals: dict[str, list[str]]
    cities: list[str]
    rules: list[dict[str, Any]]
    city_aliases: dict[str, str] = field(default_factory=dict)  # another language's name → the gazetteer's

    @classmethod
    def from_yaml(cls, path: Path) -> FallbackRules:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return cls(
            dict(data.get("goals", {})),
            list(data.get("cities", [])),
            list(data.get("rules", [])),
            {str(k): str(v) for k, v in (data.get("city_aliases") or {}).items()},
        )


class FallbackPlanner:
    def __init__(self, rules: FallbackRules, *, max_nodes: int) -> None:
        self.rules = rules
        self.max_nodes = max_nodes

    def tools_for(self, intent: Intent, catalog: ToolCatalog) -> set[str]:
        """The tools the intent's goals call for (empty when no rule covers this catalog)."""
        rules = [r for r in self.rules.rules if r["tool"] in catalog]
        return {r["tool"] for r in rules if r["goal"] in intent.goals}

    def plan(self, request: str, intent: Intent, catalog: ToolCatalog) -> Plan:
        rules = [r for r in self.rules.rules if r["tool"] in catalog]
        by_name = {r["name"]: r for r in rules}
        wanted = {r["name"] for r in rules if r["goal"] in intent.goals}
        for rule in rules:  # pull in what a wanted rule needs (catering needs a venue)
            if rule["name"] in wanted:
                wanted.update(n for n in rule.get("needs", []) if n in by_name)
        slots = self._slots(request, intent)
        made: dict[str, str] = {}
        nodes: list[dict[str, Any]] = []
        for rule in rules:
            if rule["name"] not in wanted or len(nodes) >= self.max_nodes:
                continue
            node_id = f"n{len(nodes) + 1}"
            args = self._args(rule, slots, made, nodes)
            if args is None:
                continue
            nodes.append({"id": node_id, "tool": rule["tool"], "args": args})
            made[rule["name"]] = node_id
        if not nodes:
            raise FallbackError(
                f"no fallback rule matched (goals found: {list(intent.goals) or 'none'}; "
                f"tools available: {catalog.names()[:10]})"
            )
        return Plan.model_validate({"nodes": nodes})

    def _args(
        self, rule: dict[str, Any], slots: dict[str, Any], made: dict[str, str], nodes: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        args: dict[str, Any] = {}
        for name, source in rule["args"].items():
            value = self._value(source, slots, made, nodes)
            if value is None or value == []:
                if source.get("optional"):
                    continue
                return None
            args[name] = value
        return args

    @staticmethod
    def _value(source: dict[str, Any], slots: dict[str, Any], made: dict[str, str], nodes: list[dict[str, Any]]) -> Any:
        if "value" in source:
            return source["value"]
        if "slot" in source:
            return slots.get(source["slot"])
        if "ref" in source:
            node_id = nodes[-1]["id"] if source["ref"] == "last" and nodes else made.get(source["ref"])
            if node_id is None:
                return None
            return f"${node_id}" + (f".{source['path']}" if source.get("path") else "")
        if "refs" in source:
            return [f"${made[r['ref']]}.{r['path']}" for r in source["refs"] if r["ref"] in made]
        return None

    @staticmethod
    def _slots(request: str, intent: Intent) -> dict[str, Any]:
        cities = list(intent.cities)
        origin = intent.origin or (cities[0] if len(cities) >= 2 else None)
        destination = intent.destination or (cities[1] if len(cities) >= 2 else None)
        currencies = list(intent.currencies)
        from_currency = currencies[0] if currencies else None
        to_currency = currencies[1] if len(currencies) > 1 else ("CNY" if from_currency not in (None, "CNY") else None)
        goals = set(intent.goals)
        checklist = (
            "event" if goals & {"venue", "catering"} else "contract" if "contract" in request.lower() else "trip"
        )
        return {
            "origin": origin,
            "destination": destination,
            "city": destination or (cities[-1] if cities else None),
            "date": intent.dates[0] if intent.dates else None,
            "check_in": intent.check_in,
            "check_out": intent.check_out,
            "budget": intent.budget,
            "guests": intent.guests,
            "menu": intent.menu,
            "near": intent.near,
            "family": True if intent.family else None,
            "amount": intent.amount,
            "from_currency": from_currency,
            "to_currency": to_currency,
            "request": request.strip()[:200],
            "checklist": checklist,
        }

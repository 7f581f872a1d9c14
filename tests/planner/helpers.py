"""Shared builders for planner tests."""

from __future__ import annotations

import json
from typing import Any

from contract.plan import Plan
from planner.catalog import ToolCatalog
from planner.config import CONFIG_DIR

DEMO_TOOLS: list[dict[str, Any]] = json.loads((CONFIG_DIR / "packs" / "travel" / "catalog.json").read_text())


def demo_catalog() -> ToolCatalog:
    return ToolCatalog.from_openai(DEMO_TOOLS)


def plan(*nodes: dict[str, Any]) -> Plan:
    return Plan.model_validate({"nodes": list(nodes)})


def node(node_id: str, tool: str, args: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "tool": tool, "args": args or {}, **extra}


FLIGHT = {"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20"}
HOTEL = {"city": "Hangzhou", "check_in": "2027-06-20", "check_out": "2027-06-22"}

"""The door's checks as module-level functions of picklable arguments: what a worker process runs, and
what the event loop runs itself when the input is small. Each one is bounded before it works
(planner/catalog.py, contract/plan.py, planner/safe_regex.py); the pool adds the deadline."""

from __future__ import annotations

import pickle
from typing import Any

from contract.plan import Plan
from planner.catalog import ToolCatalog
from planner.validation import PlanValidator
from serving.door.bodies import parse_body

__all__ = ["build_catalog", "parse_body", "plan_problem"]


def build_catalog(packed: bytes) -> ToolCatalog:
    """The validated catalog of pickled OpenAI-format tools (CatalogError naming the first problems)."""
    return ToolCatalog.from_openai(pickle.loads(packed))  # noqa: S301 - bytes the gateway pickled itself


def plan_problem(validator: PlanValidator, plan: Plan | dict[str, Any]) -> str | None:
    """What is wrong with a client plan after every validation layer (None: it is valid)."""
    report = validator.validate(plan)
    return None if report.ok else str(report.error)

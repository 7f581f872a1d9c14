"""Validation layers run on every decoded plan: schema → DAG → arguments → business rules.

Each layer yields `Issue`s (code, message, node, path); the first failing layer stops the run and is
raised as a typed `PlanValidationError` whose `feedback()` is the structured, model-readable text
the planner re-asks with. `ValidationReport` records every layer's outcome.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from contract.conditions import condition_problem
from contract.errors import PlanstackBaseError
from contract.plan import REFERENCE_RE, Plan
from planner.catalog import ToolCatalog
from planner.issues import Issue
from planner.rules import BusinessRules
from planner.safe_regex import schema_validator

Layer = Literal["schema", "dag", "arguments", "rules"]
LAYERS: tuple[Layer, ...] = ("schema", "dag", "arguments", "rules")
MAX_ISSUES = 20  # kept per layer: a refusal names the first problems, never thousands of them
SHOWN_ISSUES = 5  # in the error's message and the model's feedback
REFERENCE_SCHEMA = {"type": "string", "pattern": REFERENCE_RE.pattern}


class PlanValidationError(PlanstackBaseError):
    """A plan that fails one validation layer; `retryable`: the model is asked again with `feedback()`.
    Raised and handled inside the planner; a client-given plan is checked with a report instead."""

    layer: Layer = "schema"
    retryable = True

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        shown = "; ".join(i.message[:300] for i in issues[:SHOWN_ISSUES])
        more = f" (and {len(issues) - SHOWN_ISSUES} more)" if len(issues) > SHOWN_ISSUES else ""
        super().__init__(f"{self.layer}: {shown}{more}")

    def feedback(self) -> str:
        """What the model is told: the layer and each problem as one JSON line."""
        return json.dumps({"layer": self.layer, "errors": [i.as_dict() for i in self.issues[:SHOWN_ISSUES]]})


class SchemaValidationError(PlanValidationError):
    layer = "schema"


class DagValidationError(PlanValidationError):
    layer = "dag"


class ArgumentValidationError(PlanValidationError):
    layer = "arguments"


class BusinessRuleError(PlanValidationError):
    layer = "rules"


ERRORS: dict[Layer, type[PlanValidationError]] = {
    "schema": SchemaValidationError,
    "dag": DagValidationError,
    "arguments": ArgumentValidationError,
    "rules": BusinessRuleError,
}


@dataclass(frozen=True)
class LayerOutcome:
    layer: Layer
    status: Literal["passed", "failed", "skipped"]
    issues: tuple[Issue, ...] = ()


@dataclass
class ValidationReport:
    outcomes: list[LayerOutcome] = field(default_factory=list)
    plan: Plan | None = None

    @property
    def ok(self) -> bool:
        return self.plan is not None and all(o.status == "passed" for o in self.outcomes)

    @property
    def error(self) -> PlanValidationError | None:
        for outcome in self.outcomes:
            if outcome.status == "failed":
                return ERRORS[outcome.layer](list(outcome.issues))
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "layers": [
                {"layer": o.layer, "status": o.status, "issues": [i.as_dict() for i in o.issues]} for o in self.outcomes
            ],
        }


class PlanValidator:
    def __init__(self, catalog: ToolCatalog, rules: BusinessRules, *, max_nodes: int) -> None:
        self.catalog = catalog
        self.rules = rules
        self.max_nodes = max_nodes
        self._validators = {
            tool.name: schema_validator(with_references(dict(tool.parameters)), checked=True) for tool in catalog
        }  # a ToolCatalog's patterns passed its check

    def __reduce__(self) -> tuple[Any, ...]:
        """Picklable (the gateway validates large client plans in a worker process): the argument
        validators are rebuilt from the catalog there."""
        return (functools.partial(PlanValidator, max_nodes=self.max_nodes), (self.catalog, self.rules))

    def validate(self, candidate: str | Mapping[str, Any] | Plan) -> ValidationReport:
        report = ValidationReport()
        plan, issues = self.check_schema(candidate)
        report.outcomes.append(LayerOutcome("schema", "failed" if issues else "passed", tuple(issues)))
        checks: list[tuple[Layer, Callable[[Plan], list[Issue]]]] = [
            ("dag", self.check_dag),
            ("arguments", self.check_arguments),
            ("rules", self.rules.check),
        ]
        for layer, check in checks:
            if plan is None or any(o.status != "passed" for o in report.outcomes):
                report.outcomes.append(LayerOutcome(layer, "skipped"))
                continue
            found = check(plan)
            report.outcomes.append(LayerOutcome(layer, "failed" if found else "passed", tuple(found[:MAX_ISSUES])))
        report.plan = plan if report.error is None else None
        return report

    def check_schema(self, candidate: str | Mapping[str, Any] | Plan) -> tuple[Plan | None, list[Issue]]:
        if isinstance(candidate, Plan):
            return candidate, []
        data: Any = candidate
        if isinstance(candidate, str):
            try:
                data = json.loads(candidate)
            except json.JSONDecodeError as exc:
                return None, [Issue("invalid_json", f"not valid JSON: {exc.msg} at character {exc.pos}")]
        try:
            return Plan.model_validate(data), []
        except ValidationError as exc:
            return None, [
                Issue("schema", f"{err['msg']}", path=".".join(str(p) for p in err["loc"]) or None)
                for err in exc.errors()[:10]
            ]

    def check_dag(self, plan: Plan) -> list[Issue]:
        issues: list[Issue] = []
        if not plan.nodes:
            issues.append(Issue("empty_plan", "the plan has no nodes"))
        if len(plan.nodes) > self.max_nodes:
            issues.append(Issue("too_many_nodes", f"{len(plan.nodes)} nodes, at most {self.max_nodes}"))
        ids = plan.ids()
        duplicates = sorted(i for i, count in Counter(ids).items() if count > 1)  # linear: the client sizes `ids`
        issues.extend(Issue("duplicate_id", f"node id {i} is used more than once", node=i) for i in duplicates)
        known = set(ids)
        for node in plan.nodes:
            for ref in node.references():
                where = ".".join(str(p) for p in ref.arg_path)
                if ref.node == node.id:
                    issues.append(Issue("self_reference", f"{node.id} references its own output {ref}", node.id, where))
                elif ref.node not in known:
                    issues.append(Issue("dangling_reference", f"{ref} names no node in the plan", node.id, where))
            for dep in node.depends_on:
                if dep == node.id:
                    issues.append(Issue("self_dependency", f"{node.id} depends on itself", node.id, "depends_on"))
                elif dep not in known:
                    issues.append(Issue("unknown_dependency", f"depends_on names unknown node {dep}", node.id))
            if node.fallback is not None and (node.fallback not in known or node.fallback == node.id):
                issues.append(Issue("bad_fallback", f"fallback {node.fallback} is not another node", node.id))
            if node.success_condition is not None and (problem := condition_problem(node.success_condition)):
                issues.append(Issue("bad_condition", problem, node.id, "success_condition"))
        if not issues:
            cycle = find_cycle(plan)
            if cycle:
                issues.append(Issue("cycle", "dependency cycle " + " -> ".join(cycle), cycle[0]))
            issues.extend(self._check_fallbacks(plan))
        return issues

    @staticmethod
    def _check_fallbacks(plan: Plan) -> list[Issue]:
        """Standby (fallback) nodes run only when their primary fails: the fallback chains must end, and
        at least one node must be a primary, or nothing would ever run."""
        standby = plan.standby_ids()
        if plan.nodes and standby >= set(plan.ids()):
            return [Issue("no_primary_node", "every node is another node's fallback, so none would run")]
        fallback_of = {node.id: node.fallback for node in plan.nodes if node.fallback is not None}
        for start in fallback_of:
            seen, current = [start], fallback_of.get(start)
            while current is not None:
                if current in seen:
                    chain = " -> ".join([*seen, current])
                    return [Issue("fallback_cycle", f"fallback chain loops: {chain}", start, "fallback")]
                seen.append(current)
                current = fallback_of.get(current)
        return []

    def check_arguments(self, plan: Plan) -> list[Issue]:
        issues: list[Issue] = []
        for node in plan.nodes:
            validator = self._validators.get(node.tool)
            if validator is None:
                issues.append(
                    Issue("unknown_tool", f"unknown tool {node.tool!r}; known: {self.catalog.names()}", node.id)
                )
                continue
            for err in sorted(validator.iter_errors(dict(node.args)), key=lambda e: list(e.path))[:5]:
                path = ".".join(str(p) for p in err.path) or None
                code = "unknown_argument" if err.validator == "additionalProperties" else f"bad_{err.validator}"
                issues.append(Issue(code, f"{node.tool}: {err.message}", node.id, path))
        return issues


def with_references(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's argument schema where every value may also be a `$nK.path` reference."""
    props = schema.get("properties") or {}
    out = dict(schema)
    out["properties"] = {name: _allow_reference(sub) for name, sub in props.items()}
    out.setdefault("additionalProperties", False)
    return out


def _allow_reference(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        schema = {**schema, "items": _allow_reference(schema["items"])}
    return {"anyOf": [schema, REFERENCE_SCHEMA]}


def find_cycle(plan: Plan) -> list[str]:
    """One cycle as a list of ids (first id repeated at the end), or [] for a DAG."""
    upstream = {node.id: sorted(node.upstream()) for node in plan.nodes}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node_id: str) -> list[str]:
        state[node_id] = 1
        stack.append(node_id)
        for up in upstream.get(node_id, []):
            if state.get(up) == 1:
                return [*stack[stack.index(up) :], up]
            if up not in state and (found := visit(up)):
                return found
        stack.pop()
        state[node_id] = 2
        return []

    for node_id in upstream:
        if node_id not in state and (found := visit(node_id)):
            return found
    return []

"""Business rules, checked on a structurally valid plan (the last validation layer).

Each rule is `{kind: <rule kind>, tool: NAME | tools: [NAMES], ...params}`; the kinds are the functions
in `RULE_KINDS`. A rule always names the tools it binds to and judges only nodes of those tools: a
user's own `date` argument is never checked by a rule written for another tool. Rules come from the
domain packs that apply to the catalog (planner/packs/). References (`$n1.price`) are not known
before execution, so rules only judge literal values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import date
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from contract.plan import Plan, PlanNode, parse_reference
from planner.issues import Issue

RuleFn = Callable[[Plan, Mapping[str, Any], date], Iterator[Issue]]


def _issue(code: str, message: str, node: str | None = None, path: str | None = None) -> Issue:
    return Issue(code, message, node, path)


def _literal(node: PlanNode, arg: str) -> Any:
    value = node.args.get(arg)
    return None if value is None or parse_reference(value) is not None else value


def bound_tools(rule: Mapping[str, Any]) -> frozenset[str]:
    """The tool names a rule binds to (`tool` or `tools`)."""
    tools = rule.get("tools") or ([rule["tool"]] if rule.get("tool") else [])
    return frozenset(str(t) for t in tools)


def _nodes(plan: Plan, rule: Mapping[str, Any]) -> Iterator[PlanNode]:
    tools = bound_tools(rule)
    return (node for node in plan.nodes if node.tool in tools)


def _as_date(value: Any) -> date | None:
    try:
        return date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def date_order(plan: Plan, p: Mapping[str, Any], today: date) -> Iterator[Issue]:
    """`before` must be a date earlier than `after` (e.g. start < end), at most max_days apart."""
    for node in _nodes(plan, p):
        first, second = _as_date(_literal(node, p["before"])), _as_date(_literal(node, p["after"]))
        if first and second:
            if first >= second:
                yield _issue("date_order", f"{p['before']} {first} must be before {p['after']} {second}", node.id)
            elif "max_days" in p and (second - first).days > int(p["max_days"]):
                yield _issue("date_span", f"{p['before']}..{p['after']} spans more than {p['max_days']} days", node.id)


def not_in_past(plan: Plan, p: Mapping[str, Any], today: date) -> Iterator[Issue]:
    """Date arguments (by name, of the bound tools) must be ISO dates on or after today."""
    for node in _nodes(plan, p):
        for arg in p["args"]:
            value = _literal(node, arg)
            if value is None:
                continue
            parsed = _as_date(value)
            if parsed is None:
                yield _issue("bad_date", f"{arg} {value!r} is not a YYYY-MM-DD date", node.id, arg)
            elif parsed < today:
                yield _issue("date_in_past", f"{arg} {value} is before today ({today})", node.id, arg)


def value_range(plan: Plan, p: Mapping[str, Any], today: date) -> Iterator[Issue]:
    """Numeric arguments (by name, optionally of one tool) within [min, max]."""
    for node in _nodes(plan, p):
        for arg in p["args"]:
            value = _literal(node, arg)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            if "min" in p and value < p["min"]:
                yield _issue("below_min", f"{arg} {value} is below {p['min']}", node.id, arg)
            if "max" in p and value > p["max"]:
                yield _issue("above_max", f"{arg} {value} is above {p['max']} ({p.get('why', 'limit')})", node.id, arg)


def within_capacity(plan: Plan, p: Mapping[str, Any], today: date) -> Iterator[Issue]:
    """A count (e.g. catering guests) must not exceed the capacity asked of the venue it refers to."""
    for node in _nodes(plan, p):
        count = _literal(node, p["count"])
        ref = parse_reference(node.args.get(p["via"]))
        if not isinstance(count, int) or ref is None:
            continue
        try:
            upstream = plan.node(ref[0])
        except KeyError:
            continue
        capacity = _literal(upstream, p["capacity"])
        if isinstance(capacity, int) and count > capacity:
            yield _issue(
                "over_capacity",
                f"{p['count']} {count} exceeds {upstream.id}.{p['capacity']} {capacity}",
                node.id,
                p["count"],
            )


RULE_KINDS: Mapping[str, RuleFn] = MappingProxyType(
    {
        "date_order": date_order,
        "not_in_past": not_in_past,
        "value_range": value_range,
        "within_capacity": within_capacity,
    }
)


class BusinessRules:
    def __init__(self, rules: list[dict[str, Any]], today: date) -> None:
        unknown = [r.get("kind") for r in rules if r.get("kind") not in RULE_KINDS]
        if unknown:
            raise ValueError(f"unknown business rule kinds {unknown}; known: {sorted(RULE_KINDS)}")
        unbound = [r.get("kind") for r in rules if not bound_tools(r)]
        if unbound:
            raise ValueError(f"business rules {unbound} name no tool: every rule binds to `tool` or `tools`")
        self.rules = rules
        self.today = today

    @classmethod
    def from_yaml(cls, path: Path, today: date) -> BusinessRules:
        data = yaml.safe_load(path.read_text()) or {}
        return cls(list(data.get("rules", [])), today)

    def check(self, plan: Plan) -> list[Issue]:
        return [issue for rule in self.rules for issue in RULE_KINDS[rule["kind"]](plan, rule, self.today)]

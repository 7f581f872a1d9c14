"""Which earlier outputs a node probably consumes: references ranked for the prompt and the fallback.

A node's step text often names what it takes from an earlier call ("convert *the tip amount*", "send
*the encrypted data*", "translate *it*"); an argument is often named like the output field it takes
(`distance` ← `$n1.distance`). Both are generic signals read from names and words, never from a domain.

A tenant's history adds a third, learned one: an argument its demonstrations (corrected or accepted
plans) keep filling with an earlier node's output (`send_sms.message` ← `$n1.password`) is offered
only references when it follows an earlier node, unless the request names a value for it
(`learned_references`; the rule's thresholds are calibrated on held-out pools, planner/config.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from contract.demonstrations import Demonstration
from contract.plan import iter_references
from planner.catalog import ToolCatalog, ToolDef
from planner.lexicon import lexicon_for, weights
from planner.upstream import Upstream
from planner.values import name_tokens

_WORD = re.compile(r"[a-z]+")


def _field_words(path: str) -> set[str]:
    return {t for part in path.split(".") for t in name_tokens(part) if len(t) > 2}


def reference_hints(step: str, arg_names: Sequence[str], upstream: Sequence[Upstream], *, limit: int = 8) -> list[str]:
    """References worth showing for a node, best first (the grammar offers all of them anyway)."""
    words = set(_WORD.findall(step.lower()))
    args = {t for name in arg_names for t in name_tokens(name)}
    anaphora = lexicon_for(step).anaphora
    w = weights().hints
    scored: list[tuple[float, int, str]] = []
    order = 0
    for distance, up in enumerate(reversed(upstream)):
        tool_words = {t for t in name_tokens(up.tool.name) if len(t) > 2}
        mentioned = bool(tool_words & words) or bool(anaphora.search(step))
        whole = w["whole"] + (w["whole_mentioned"] if mentioned else 0.0) - w["distance"] * distance
        scored.append((whole, order, f"${up.node_id}"))
        order += 1
        for path, _kind in up.tool.output_fields:
            fw = _field_words(path)
            score = (
                w["field_in_step"] * len(fw & words)
                + w["field_in_args"] * len(fw & args)
                + (w["field_mentioned"] if mentioned else 0.0)
                - w["distance"] * distance
            )
            scored.append((score, order, f"${up.node_id}.{path}"))
            order += 1
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [ref for score, _, ref in scored[:limit] if score > 0]


# -- data flow learned from demonstrations -----------------------------------------------------------


@dataclass
class ArgHistory:
    """How one argument of one tool was filled in demonstrations, where its node had an earlier node."""

    refs: int = 0
    literals: int = 0
    sources: set[str] = field(default_factory=set)  # the tools it took references from

    @property
    def seen(self) -> int:
        return self.refs + self.literals


References = dict[tuple[str, str], ArgHistory]
"""(tool, argument) → its history."""


def learn_references(demos: Iterable[Demonstration], catalog: ToolCatalog) -> References:
    """Count, per (tool, argument), how often a demonstration filled it with a reference to an earlier
    node's output rather than a literal. A node counts only when its tool is in `catalog` with every
    argument it was given (the same tool, not a namesake) and it is not its plan's first node."""
    out: References = {}
    for demo in demos:
        nodes = [n for n in demo.plan.get("nodes", []) if isinstance(n, dict)]
        tools = {str(n.get("id")): str(n.get("tool")) for n in nodes}
        for index, node in enumerate(nodes):
            name, args = node.get("tool"), node.get("args")
            if index == 0 or not isinstance(args, dict) or name not in catalog:
                continue
            if not set(args) <= set(catalog.get(str(name)).properties):
                continue
            for arg, value in args.items():
                history = out.setdefault((str(name), arg), ArgHistory())
                upstream = {ref.node for ref in iter_references(value)}
                if upstream:
                    history.refs += 1
                    history.sources |= {tools[u] for u in upstream if u in tools}
                else:
                    history.literals += 1
    return out


@dataclass(frozen=True)
class LearnedRule:
    """When a learned history makes an argument a reference (planner/config.py: `learned_refs_*`)."""

    min_count: int
    min_rate: float

    def applies(self, history: ArgHistory | None) -> bool:
        return history is not None and history.refs >= self.min_count and history.refs / history.seen >= self.min_rate


def learned_references(
    tool: ToolDef,
    histories: References,
    rule: LearnedRule,
    upstream: Sequence[Upstream],
    cued: Callable[[str], bool],
) -> dict[str, tuple[str, ...]]:
    """The arguments of this node the history says take an earlier output, each with the earlier nodes
    it may reference: those whose tool it took references from, else every earlier node. An argument
    the request gives a value for by name (`cued`: "an amount of 50") keeps its literal options."""
    if not upstream:
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for arg in tool.arg_names():
        history = histories.get((tool.name, arg))
        if history is None or not rule.applies(history) or cued(arg):
            continue
        known = tuple(up.node_id for up in upstream if up.tool.name in history.sources)
        out[arg] = known or tuple(up.node_id for up in upstream)
    return out

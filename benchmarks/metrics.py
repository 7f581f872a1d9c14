"""Plan accuracy against a gold plan.

- node F1: multiset of tool names;
- alignment: the i-th node of tool T in the prediction ↔ the i-th node of tool T in the gold plan;
- edge F1: dependency pairs (upstream, downstream) of the prediction mapped through the alignment
  (an edge touching an unaligned node cannot match) against the gold edges;
- argument-name F1: multiset of (tool, argument name);
- argument-value accuracy: gold arguments (over all gold nodes) whose aligned prediction has the
  same value (strings case- and space-insensitive, numbers numerically, references through the
  alignment); an unaligned gold node scores 0 for each of its arguments;
- full match: same size, every node aligned, same edges, identical arguments.
Conventions: two empty sets give F1 1.0; one empty set gives 0.0. An invalid prediction (None)
scores 0 everywhere (and schema_valid 0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from contract.plan import Plan, parse_reference


@dataclass(frozen=True)
class PlanScores:
    schema_valid: float
    node_f1: float
    edge_f1: float
    arg_name_f1: float
    arg_value_acc: float
    full_match: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


ZERO = PlanScores(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def f1(predicted: Iterable[Hashable], gold: Iterable[Hashable]) -> float:
    p, g = Counter(predicted), Counter(gold)
    if not p and not g:
        return 1.0
    if not p or not g:
        return 0.0
    tp = sum((p & g).values())
    if tp == 0:
        return 0.0
    precision, recall = tp / sum(p.values()), tp / sum(g.values())
    return 2 * precision * recall / (precision + recall)


def align(predicted: Plan, gold: Plan) -> dict[str, str]:
    """Prediction node id → gold node id, pairing same-tool nodes in order of appearance."""
    gold_by_tool: dict[str, list[str]] = {}
    for node in gold.nodes:
        gold_by_tool.setdefault(node.tool, []).append(node.id)
    used: Counter[str] = Counter()
    mapping: dict[str, str] = {}
    for node in predicted.nodes:
        candidates = gold_by_tool.get(node.tool, [])
        if used[node.tool] < len(candidates):
            mapping[node.id] = candidates[used[node.tool]]
            used[node.tool] += 1
    return mapping


def _normal(value: Any, mapping: Mapping[str, str] | None) -> Any:
    ref = parse_reference(value)
    if ref is not None:
        node = mapping.get(ref[0], f"?{ref[0]}") if mapping is not None else ref[0]
        return ("ref", node, ref[1])
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return round(float(value), 6)
    if isinstance(value, str):
        return " ".join(value.lower().split())
    if isinstance(value, list):
        return tuple(_normal(v, mapping) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _normal(v, mapping)) for k, v in value.items()))
    return value


def score(predicted: Plan | None, gold: Plan) -> PlanScores:
    if predicted is None:
        return ZERO
    mapping = align(predicted, gold)
    node_f1 = f1((n.tool for n in predicted.nodes), (n.tool for n in gold.nodes))
    mapped_edges = [(mapping.get(a, f"?{a}"), mapping.get(b, f"?{b}")) for a, b in predicted.edges()]
    edge_f1 = f1(mapped_edges, gold.edges())
    arg_name_f1 = f1(
        ((n.tool, k) for n in predicted.nodes for k in n.args), ((n.tool, k) for n in gold.nodes for k in n.args)
    )
    by_gold = {gold_id: predicted.node(pred_id) for pred_id, gold_id in mapping.items()}
    total = correct = 0
    exact_nodes = True
    for node in gold.nodes:
        pred = by_gold.get(node.id)
        total += len(node.args)
        if pred is None:
            exact_nodes = False
            continue
        for key, value in node.args.items():
            if key in pred.args and _normal(pred.args[key], mapping) == _normal(value, None):
                correct += 1
        if {k: _normal(v, mapping) for k, v in pred.args.items()} != {
            k: _normal(v, None) for k, v in node.args.items()
        }:
            exact_nodes = False
    arg_value_acc = correct / total if total else (1.0 if node_f1 == 1.0 else 0.0)
    full = (
        exact_nodes
        and len(predicted.nodes) == len(gold.nodes)
        and len(mapping) == len(gold.nodes)
        and set(mapped_edges) == gold.edges()
    )
    return PlanScores(1.0, node_f1, edge_f1, arg_name_f1, arg_value_acc, 1.0 if full else 0.0)


def mean_scores(scores: Sequence[PlanScores]) -> dict[str, float]:
    if not scores:
        return {}
    keys = ZERO.as_dict().keys()
    return {k: round(sum(s.as_dict()[k] for s in scores) / len(scores), 4) for k in keys}

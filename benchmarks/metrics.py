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

Answers and filler (`evaluate`), for sets whose gold may also be "no plan" or "needs input":
- the answer's kind (`answer_kind`): `needs_input` (the planner says so, or its plan asks the user
  through an `ask_user` node), `no_plan` (the no-plan answer, or an empty plan), `plan` (a plan with
  nodes), `none` (no valid answer); `answer_correct` is 1 when it is the gold's kind, and
  `no_plan_correct` / `needs_input_correct` are the same number over the requests whose gold is that
  answer (so their means are "answered as gold says" rates);
- the plan metrics above are computed only where the gold is a plan;
- filler: an optional argument (one its tool's schema does not require) that the predicted plan writes
  with a non-null value is *unsupported* when the aligned gold node (same alignment as above) does not
  have that argument, whatever its value; every optional argument of an unaligned predicted node is
  unsupported, and so is every one written where the gold answer is not a plan. Per request
  `optional_written` and `optional_unsupported` are counted; the **filler rate** of a set is
  Σ unsupported / Σ written over its requests (no rate when nothing optional was written). Arguments of
  tools outside the catalog (e.g. `ask_user`) are not counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
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


ASK_USER = "ask_user"
COUNT_KEYS = ("optional_written", "optional_unsupported")
ANSWER_KEYS = ("answer_correct", "no_plan_correct", "needs_input_correct")


def answer_kind(plan: Plan | None, path: str = "") -> str:
    """What the planner answered: "plan", "no_plan", "needs_input" or "none" (no valid answer)."""
    if path in ("no_plan", "needs_input"):
        return path
    if plan is None:
        return "none"
    if any(node.tool == ASK_USER for node in plan.nodes):
        return "needs_input"
    return "plan" if plan.nodes else "no_plan"


@dataclass(frozen=True)
class Filler:
    written: int  # optional arguments the predicted plan writes (non-null)
    unsupported: int  # of those, the ones the aligned gold node does not have


def filler(predicted: Plan | None, gold: Plan, required: Mapping[str, Collection[str]]) -> Filler:
    """Optional arguments written and unsupported (module docstring); `required` maps each catalog tool
    to its required argument names."""
    if predicted is None:
        return Filler(0, 0)
    mapping = align(predicted, gold)
    written = unsupported = 0
    for node in predicted.nodes:
        needed = required.get(node.tool)
        if needed is None:
            continue
        aligned = gold.node(mapping[node.id]) if node.id in mapping else None
        for name, value in node.args.items():
            if name in needed or value is None:
                continue
            written += 1
            unsupported += aligned is None or name not in aligned.args
    return Filler(written, unsupported)


def evaluate(
    predicted: Plan | None,
    gold: Plan,
    *,
    path: str = "",
    expect: str = "plan",
    required: Mapping[str, Collection[str]] | None = None,
) -> dict[str, float]:
    """Plan metrics (where the gold is a plan), the answer's correctness and the filler counts."""
    kind = answer_kind(predicted, path)
    out: dict[str, float] = score(predicted, gold).as_dict() if expect == "plan" else {}
    out["answer_correct"] = float(kind == expect)
    if expect in ("no_plan", "needs_input"):
        out[f"{expect}_correct"] = float(kind == expect)
    if required is not None:
        counted = filler(predicted, gold, required)
        out["optional_written"], out["optional_unsupported"] = float(counted.written), float(counted.unsupported)
    return out


def aggregate(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Means of every key over the rows that have it; the filler counts become `filler_rate`
    (Σ unsupported / Σ written; absent when nothing optional was written)."""
    keys = list(dict.fromkeys(k for row in rows for k in row))
    out: dict[str, float] = {}
    for key in keys:
        if key in COUNT_KEYS:
            continue
        values = [row[key] for row in rows if key in row]
        out[key] = round(sum(values) / len(values), 4)
    written = sum(row.get("optional_written", 0.0) for row in rows)
    if written:
        out["filler_rate"] = round(sum(row.get("optional_unsupported", 0.0) for row in rows) / written, 4)
    return out


def required_arguments(tools: Iterable[Mapping[str, object]]) -> dict[str, frozenset[str]]:
    """Tool name → required argument names, from OpenAI-format tool definitions."""
    out: dict[str, frozenset[str]] = {}
    for tool in tools:
        function = tool.get("function")
        if isinstance(function, Mapping):
            parameters = function.get("parameters")
            required = parameters.get("required", ()) if isinstance(parameters, Mapping) else ()
            out[str(function.get("name"))] = frozenset(str(r) for r in required or ())
    return out

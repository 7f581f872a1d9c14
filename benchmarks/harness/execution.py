"""Executed-plan success: a plan run on the demo tools, as a served run would run it.

Each plan goes through the composition root's `StandaloneRuns` (the served `RunService` and
`DagScheduler` on the demo tools; no re-planner, no backoff sleeps, a fresh scheduler per plan so one
bad plan's circuit breakers cannot fail the next).

- `node_success`: share of the plan's primary nodes that succeeded (directly or through their
  fallback node); the plan is **accurate** when it is ≥ 0.9 (the seeds' criterion). An empty or
  missing plan scores 0.
- `expected_data`: share of the GOLD plan's nodes whose aligned predicted node (benchmarks.metrics.align)
  returned exactly the gold node's output (same SHA-256); accurate when ≥ 0.9. Stricter: a plan
  that runs but asks for the wrong city succeeds, yet does not return the expected data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.metrics import align
from contract.plan import Plan
from executors.observation import NodeResult
from executors.registry import ToolRegistry
from serving.stack import StandaloneRuns

THRESHOLD = 0.9


@dataclass(frozen=True)
class ExecScore:
    node_success: float
    exec_success: float  # 1.0 when node_success >= THRESHOLD
    expected_data: float
    exec_expected: float  # 1.0 when expected_data >= THRESHOLD

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


EXEC_ZERO = ExecScore(0.0, 0.0, 0.0, 0.0)


async def _no_sleep(_: float) -> None:
    return None


def node_success_share(plan: Plan, results: list[NodeResult]) -> float:
    """Succeeded primary nodes / primary nodes (a primary rescued by its fallback counts as succeeded)."""
    standby = plan.standby_ids()
    primaries = [n.id for n in plan.nodes if n.id not in standby]
    if not primaries:
        return 0.0
    ok = {r.node_id for r in results if r.ok} | {r.fallback_for for r in results if r.ok and r.fallback_for}
    return sum(1 for node in primaries if node in ok) / len(primaries)


def expected_data_share(
    predicted: Plan, pred_results: list[NodeResult], gold: Plan, gold_results: list[NodeResult]
) -> float:
    if not gold.nodes:
        return 1.0 if not predicted.nodes else 0.0
    gold_out = {r.node_id: r.output_sha256 for r in gold_results if r.ok}
    pred_out = {r.node_id: r.output_sha256 for r in pred_results if r.ok}
    matched = sum(
        1
        for pred_id, gold_id in align(predicted, gold).items()
        if pred_id in pred_out and gold_out.get(gold_id) is not None and pred_out[pred_id] == gold_out[gold_id]
    )
    return matched / len(gold.nodes)


class PlanExecutor:
    """Runs plans on the demo tools; gold executions are cached per plan."""

    def __init__(self, store_dir: Path, registry: ToolRegistry | None = None, seed: int = 7) -> None:
        self.runs = StandaloneRuns(
            str(store_dir / "bench-runs.sqlite3"), registry=registry, sleep=_no_sleep, seed=seed
        )
        self._gold: dict[str, list[NodeResult]] = {}

    async def run(self, request: str, plan: Plan) -> list[NodeResult]:
        view = await self.runs.run("bench", request, plan)
        return [n for n in view.nodes if n.round == 0]

    async def score(self, request: str, predicted: Plan | None, gold: Plan) -> ExecScore:
        if predicted is None or not predicted.nodes:
            return EXEC_ZERO
        key = gold.model_dump_json()
        if key not in self._gold:
            self._gold[key] = await self.run(request, gold)
        results = await self.run(request, predicted)
        success = node_success_share(predicted, results)
        expected = expected_data_share(predicted, results, gold, self._gold[key])
        return ExecScore(
            round(success, 4), float(success >= THRESHOLD), round(expected, 4), float(expected >= THRESHOLD)
        )

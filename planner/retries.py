"""What the next attempt at a plan changes, given why the last one failed.

A retry that repeats the same prompt and grammar fails the same way at temperature 0, so each cause
has its own change: a refused prompt loses its examples, a refused grammar becomes a free one, a cut-off
or invalid JSON answer tightens the grounding, and an invalid plan removes the values that were
rejected, drops the skeleton and shows the structured error.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from planner.config import Grounding
from planner.validation import ValidationReport
from planner.values import RequestValues

STRICTER: dict[Grounding, Grounding] = {
    "free": "hybrid",
    "hybrid": "grounded",
    "grounded": "strict",
    "strict": "strict",
}
# a reference the model wrote itself (as free text: the grammar offers only earlier nodes' outputs) to its
# own node, a node not in the plan, or round a cycle
_REFERENCE_ISSUES = frozenset({"self_reference", "dangling_reference", "cycle"})
LOOSER: dict[Grounding, Grounding] = {"strict": "grounded", "grounded": "hybrid", "hybrid": "free", "free": "free"}


@dataclass
class RetryPlan:
    """What one attempt does: its grounding, excluded values, skeleton, examples and repair feedback."""

    grounding: Grounding
    use_skeleton: bool = True
    excluded: dict[str, list[Any]] = field(default_factory=dict)
    feedback: str = ""
    changes: list[str] = field(default_factory=list)
    examples: bool = True  # False: no demonstrations (the engine said the conversation was too long)
    compact: int = 0  # how short the prompt's tool lines are (planner/prompts.py COMPACT_LEVELS)

    def after_refusal(self, message: str) -> RetryPlan:
        """The engine refused the request (400): a prompt past the context, or a grammar."""
        if "context length" in message or "input tokens" in message:
            why = ["no examples and shorter tool lines (the prompt was past the context length)"]
            return replace(self, use_skeleton=False, feedback="", changes=why, examples=False, compact=self.compact + 1)
        why = ["grounding free (engine refused the grammar)"]
        return replace(self, grounding="free", use_skeleton=False, feedback="", changes=why)

    def after_bad_json(self, repair: str) -> RetryPlan:
        """A cut-off or invalid answer: a stricter grounding writes shorter values."""
        stricter = STRICTER[self.grounding]
        changes = [f"grounding {stricter}", "no skeleton", "error shown"]
        return replace(self, grounding=stricter, use_skeleton=False, feedback=repair, changes=changes)

    def after_invalid_plan(
        self, candidate: dict[str, Any], report: ValidationReport, values: RequestValues, repair: str
    ) -> RetryPlan:
        """Each rejected literal value leaves its argument's options. When every issue was a value of the
        request itself (one of the candidates), the grounding stays: another candidate may be right, and
        a looser grammar would let the model write the rejected value again. When every issue is a
        reference the model wrote as free text ("$n1.data.0.origin" inside node n1, copied from an
        example), it tightens one step, so that only the request's values and the offered references can
        be written. Otherwise it loosens one step (the right value may be outside the candidates)."""
        error = report.error
        excluded = {k: list(v) for k, v in self.excluded.items()}
        nodes = {n["id"]: n for n in candidate.get("nodes", [])}
        issues = error.issues if error else []
        own = [c.value for c in (*values.strings(), *values.numbers())]
        removed = 0
        for issue in issues:
            node = nodes.get(issue.node or "")
            arg = (issue.path or "").split(".")[0]
            if node is not None and arg in node.get("args", {}) and not isinstance(node["args"][arg], dict):
                excluded.setdefault(arg, []).append(node["args"][arg])
                removed += node["args"][arg] in own
        if issues and all(issue.code in _REFERENCE_ISSUES for issue in issues):
            grounding = STRICTER[self.grounding]  # a reference written as free text: no free text this time
        elif issues and removed == len(issues):
            grounding = self.grounding
        else:
            grounding = LOOSER[self.grounding]
        changes = [f"grounding {grounding}", f"excluded {sum(len(v) for v in excluded.values())} rejected values"]
        return replace(
            self,
            grounding=grounding,
            use_skeleton=False,
            excluded=excluded,
            feedback=repair,
            changes=[*changes, "no skeleton", "error shown"],
        )

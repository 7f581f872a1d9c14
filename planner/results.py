"""What planning returns: the plan (or why there is none), which path made it, every attempt.

`PlanResult.path` is `model` / `model_retry` (the model wrote it), `fallback` (rules wrote it, after
the model path failed), `cache`, `no_plan` (nothing in the catalog fits; `reason` says why) or
`needs_input` (a required value the request does not give, or gives and a business rule refuses:
`missing` lists each as {node, tool, argument, reason}; never an invented value).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from contract.errors import PlanstackBaseError
from contract.plan import Plan
from planner.validation import ValidationReport

Path_ = Literal["model", "model_retry", "fallback", "cache", "no_plan", "needs_input"]
PLAN_ID_PATTERN = r"^plan_[0-9a-f]{24}$"


def new_plan_id() -> str:
    """The id of one planning answer (feedback on it names this id)."""
    return "plan_" + uuid.uuid4().hex[:24]


@dataclass
class Attempt:
    number: int
    raw_text: str
    error: str | None = None
    error_layer: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    calls: int = 0  # engine calls
    forced: int = 0  # node calls answered without the engine: their grammar admitted one value only
    decode_s_per_token: float | None = None
    tools_from: str = "model"
    grounding: str = ""
    changes: list[str] = field(default_factory=list)
    call_timings: list[dict[str, Any]] = field(default_factory=list)
    grammars: list[dict[str, Any]] = field(default_factory=list)  # each node's argument grammar, decoded or not

    @property
    def skeleton(self) -> bool:
        return self.tools_from == "skeleton"

    def as_dict(self) -> dict[str, Any]:
        """Everything but the grammars themselves (kept for benchmarks, too large for API answers)."""
        out = {k: v for k, v in self.__dict__.items() if k != "grammars"}
        out["call_timings"] = [{k: v for k, v in t.items() if k != "schema"} for t in self.call_timings]
        return out


@dataclass
class PlanResult:
    plan: Plan | None
    path: Path_
    attempts: list[Attempt] = field(default_factory=list)
    validation: ValidationReport | None = None
    timings: dict[str, float] = field(default_factory=dict)
    fallback_reason: str | None = None
    catalog_hash: str = ""
    reason: str | None = None  # why there is no plan (paths "no_plan", "needs_input")
    selection: dict[str, Any] = field(default_factory=dict)
    packs: list[str] = field(default_factory=list)
    plan_id: str = field(default_factory=new_plan_id)
    missing: list[dict[str, str]] = field(default_factory=list)  # path "needs_input": what the user must give

    @property
    def usage(self) -> dict[str, int]:
        prompt = sum(a.prompt_tokens for a in self.attempts)
        completion = sum(a.completion_tokens for a in self.attempts)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def as_dict(self) -> dict[str, Any]:
        return {
            "plan_id": self.plan_id,
            "plan": self.plan.model_dump(exclude_none=True) if self.plan is not None else None,
            "path": self.path,
            "reason": self.reason,
            "fallback_reason": self.fallback_reason,
            "attempts": [a.as_dict() for a in self.attempts],
            "validation": self.validation.as_dict() if self.validation else None,
            "timings": self.timings,
            "usage": self.usage,
            "catalog_hash": self.catalog_hash,
            "selection": self.selection,
            "packs": self.packs,
            "missing": self.missing,
        }


class PlanningFailed(PlanstackBaseError):
    """Neither the model nor the fallback produced a valid plan (422: the request was understood, no
    valid plan could be made for it); `reason` says why, `attempts` what was tried."""

    status = 422
    type = "invalid_request_error"
    code = "planning_failed"

    def __init__(self, reason: str, attempts: list[Attempt]) -> None:
        super().__init__(f"no valid plan could be produced: {reason}")
        self.reason = reason
        self.attempts = attempts


class InvalidPlanningRequest(PlanstackBaseError):
    """The request text cannot be planned at all: empty, or longer than `planner.request_max_chars`."""

    status = 400
    type = "invalid_request_error"
    param = "request"

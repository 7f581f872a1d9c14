"""Reviewer tool `review_result`: check a result against a checklist from `executors/data/checklists.json`.

Each check is data, not code: a JMESPath expression over the subject (see the file's `_about`),
optionally guarded by an `applies` expression. `checked` counts the checks that applied; a subject
to which no check applies fails ("nothing to review").
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, JsonValue

from executors.conditions import evaluate, is_truthy
from executors.errors import InvalidCondition
from executors.registry import ToolRegistry
from executors.tools.data import DemoData

Checklist = Literal["trip", "event", "contract"]


class Review(BaseModel):
    passed: bool
    failures: list[str] = Field(description="Names of the checks that failed.")
    checked: int = Field(description="How many checks applied to the subject.")


def review(subject: Any, checks: list[dict[str, str]]) -> Review:
    """Run checklist entries `{name, check, applies?}` over `subject`."""
    document = subject if isinstance(subject, dict) else {"value": subject}
    failures: list[str] = []
    checked = 0
    for entry in checks:
        try:
            if "applies" in entry and not is_truthy(evaluate(entry["applies"], document, max_chars=2000)):
                continue
            checked += 1
            if not is_truthy(evaluate(entry["check"], document, max_chars=2000)):
                failures.append(entry["name"])
        except InvalidCondition:
            checked += 1
            failures.append(f"{entry['name']} (could not be evaluated on this subject)")
    if checked == 0:
        failures.append("nothing to review: the subject has none of the fields this checklist checks")
    return Review(passed=not failures, failures=failures, checked=checked)


def register_review(registry: ToolRegistry, data: DemoData) -> None:
    checklists: dict[str, list[dict[str, str]]] = {
        name: entries for name, entries in data.checklists.items() if not name.startswith("_")
    }

    @registry.tool(version="1", timeout_s=5, retries=1, concurrency_class="review")
    def review_result(
        subject: Annotated[JsonValue, Field(description='The result to review, usually a reference such as "$n3".')],
        checklist: Annotated[Checklist, Field(description="Which checklist: trip, event or contract.")],
    ) -> Review:
        """Check a result against a named checklist; returns whether it passed and which checks failed."""
        return review(subject, checklists[checklist])

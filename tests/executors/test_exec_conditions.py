"""success_condition: JMESPath over the output; false → condition_failed; invalid → invalid_condition;
strings that try to execute code do nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from exec_helpers import make_registry, make_scheduler, plan_of, run

from executors.conditions import check_condition, is_truthy

OUTPUT = {"count": 2, "flights": [{"price": 900}, {"price": 1200}], "cheapest": {"price": 900}, "empty": []}


@pytest.mark.parametrize(
    "expression",
    ["count > `0`", "cheapest.price < `1000`", "length(flights) == `2`", "flights[?price > `1000`]", "count"],
)
def test_true_conditions(expression: str) -> None:
    outcome = check_condition(expression, OUTPUT)
    assert outcome.passed and outcome.error is None


@pytest.mark.parametrize("expression", ["count > `5`", "empty", "missing_field", "flights[?price > `5000`]"])
def test_false_conditions(expression: str) -> None:
    outcome = check_condition(expression, OUTPUT)
    assert not outcome.passed
    assert outcome.error is not None and outcome.error.structured()["type"] == "condition_failed"


def test_jmespath_truthiness() -> None:
    assert is_truthy(0) and is_truthy("x") and is_truthy([0])
    falsy: list[object] = [None, False, "", [], {}]
    assert not any(is_truthy(v) for v in falsy)


MALICIOUS = [
    "__import__('os').system('touch {marker}')",
    "exec(\"open('{marker}', 'w')\")",
    'eval(\'__import__("os").system("touch {marker}")\')',
    "count; import os; os.system('touch {marker}')",
    "`{{}}`.__class__.__mro__",
    "lambda: open('{marker}', 'w')",
    "$(touch {marker})",
    "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((count))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
]


@pytest.mark.parametrize("template", MALICIOUS)
def test_malicious_condition_does_nothing_and_fails_cleanly(template: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    expression = template.format(marker=marker)
    outcome = check_condition(expression, OUTPUT)
    assert not marker.exists()
    assert not outcome.passed and outcome.error is not None
    assert outcome.error.structured()["type"] in ("invalid_condition", "condition_failed")


def test_too_long_condition_is_invalid() -> None:
    outcome = check_condition("count || " * 100 + "count", OUTPUT, max_chars=500)
    assert not outcome.passed and outcome.error is not None and outcome.error.kind == "invalid_condition"
    assert "max 500" in outcome.error.message


def test_conditions_in_a_plan(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    plan = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "a", "value": 3}, "success_condition": "value > `2`"},
        {"id": "n2", "tool": "echo", "args": {"label": "b", "value": 1}, "success_condition": "value > `2`"},
        {
            "id": "n3",
            "tool": "echo",
            "args": {"label": "c"},
            "success_condition": f"__import__('os').system('touch {marker}')",
        },
    )
    outcome = run(make_scheduler(make_registry()).run_plan(plan))
    n1, n2, n3 = (outcome.results[k] for k in ("n1", "n2", "n3"))
    assert n1.status == "succeeded" and n1.condition_passed is True and n1.success_condition == "value > `2`"
    assert n2.status == "failed" and n2.condition_passed is False and n2.attempts == 1
    assert n2.error is not None and n2.error["type"] == "condition_failed" and n2.error["retryable"] is False
    assert n2.output is not None  # the output is kept for the trace
    assert n3.status == "failed" and n3.error is not None and n3.error["type"] == "invalid_condition"
    assert not marker.exists()

"""Answer correctness (plan / no plan / needs input) and the filler rate (benchmarks/metrics.py)."""

from __future__ import annotations

from benchmarks.metrics import aggregate, answer_kind, evaluate, filler, required_arguments
from contract.plan import Plan

TOOLS = [
    {"type": "function", "function": {"name": "searchCustomers", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}}},
    {"type": "function", "function": {"name": "createInvoice", "parameters": {
        "type": "object",
        "properties": {n: {"type": "string"} for n in ("customerId", "amount", "currency", "dueDays", "notes", "issueDate")},
        "required": ["customerId", "amount"]}}},
]  # fmt: skip
REQUIRED = required_arguments(TOOLS)
GOLD = Plan.model_validate(
    {
        "nodes": [
            {"id": "n1", "tool": "searchCustomers", "args": {"query": "ACME"}},
            {
                "id": "n2",
                "tool": "createInvoice",
                "args": {"customerId": "$n1.data.0.id", "amount": 1200, "currency": "EUR", "issueDate": "2027-03-03"},
            },
        ]
    }
)


def plan(*nodes: dict[str, object]) -> Plan:
    return Plan.model_validate({"nodes": [{"id": f"n{i}", **n} for i, n in enumerate(nodes, 1)]})


def test_required_arguments_come_from_the_tool_schemas() -> None:
    assert required_arguments(TOOLS) == {"searchCustomers": {"query"}, "createInvoice": {"customerId", "amount"}}


def test_the_issue_example_writes_five_optional_arguments_of_which_two_are_filler() -> None:
    padded = plan(
        {
            "tool": "createInvoice",
            "args": {
                "customerId": "ACME",
                "amount": "1200",
                "currency": "invoice",
                "dueDays": "March 3, 2027",
                "notes": "ACME",
                "issueDate": "March 3, 2027",
            },
        }
    )
    # aligned with the gold createInvoice: currency and issueDate are gold arguments (wrong values are the
    # arg-value metric's business), dueDays and notes are not
    assert filler(padded, GOLD, REQUIRED).written == 4 and filler(padded, GOLD, REQUIRED).unsupported == 2
    scores = evaluate(padded, GOLD, required=REQUIRED)
    assert scores["optional_written"] == 4 and scores["optional_unsupported"] == 2 and scores["answer_correct"] == 1


def test_optional_arguments_of_an_unaligned_node_are_all_filler_and_nulls_are_not_written() -> None:
    extra = plan(
        {"tool": "searchCustomers", "args": {"query": "ACME", "limit": 5}},
        {"tool": "searchCustomers", "args": {"query": "ACME", "limit": 10}},
        {"tool": "createInvoice", "args": {"customerId": "$n1.data.0.id", "amount": 1200, "notes": None}},
    )
    counted = filler(extra, GOLD, REQUIRED)
    assert (counted.written, counted.unsupported) == (2, 2)  # n1.limit (not in gold) + the unaligned n2's limit
    assert filler(GOLD, GOLD, REQUIRED).unsupported == 0 and filler(None, GOLD, REQUIRED).written == 0


def test_answer_kinds() -> None:
    assert answer_kind(GOLD) == "plan" and answer_kind(None) == "none" and answer_kind(Plan()) == "no_plan"
    assert answer_kind(None, "no_plan") == "no_plan" and answer_kind(None, "needs_input") == "needs_input"
    asks = plan({"tool": "ask_user", "args": {"question": "Which customer?"}})
    assert answer_kind(asks) == "needs_input"


def test_no_plan_and_needs_input_are_scored_as_answers_without_plan_metrics() -> None:
    empty = Plan()
    right = evaluate(None, empty, path="no_plan", expect="no_plan", required=REQUIRED)
    assert right == {
        "answer_correct": 1.0,
        "no_plan_correct": 1.0,
        "optional_written": 0.0,
        "optional_unsupported": 0.0,
    }
    invented = evaluate(GOLD, empty, path="model", expect="needs_input", required=REQUIRED)
    assert invented["needs_input_correct"] == 0.0 and "node_f1" not in invented
    assert invented["optional_unsupported"] == invented["optional_written"] == 2  # nothing optional is supported
    asked = evaluate(plan({"tool": "ask_user", "args": {"question": "Amount?"}}), empty, expect="needs_input")
    assert asked["needs_input_correct"] == 1.0 and "optional_written" not in asked


def test_a_plan_where_gold_is_a_plan_keeps_the_plan_metrics_unchanged() -> None:
    scores = evaluate(GOLD, GOLD, path="model", required=REQUIRED)
    assert scores["node_f1"] == scores["edge_f1"] == scores["arg_value_acc"] == scores["full_match"] == 1.0
    assert scores["answer_correct"] == 1.0 and "no_plan_correct" not in scores
    assert evaluate(None, GOLD, path="no_plan")["node_f1"] == 0.0  # answering "no plan" to a plan request


def test_aggregate_averages_each_key_where_present_and_pools_the_filler_counts() -> None:
    rows = [
        {"node_f1": 1.0, "answer_correct": 1.0, "optional_written": 4.0, "optional_unsupported": 2.0},
        {"node_f1": 0.5, "answer_correct": 0.0, "optional_written": 0.0, "optional_unsupported": 0.0},
        {"answer_correct": 1.0, "no_plan_correct": 1.0, "optional_written": 1.0, "optional_unsupported": 1.0},
    ]
    out = aggregate(rows)
    assert out["node_f1"] == 0.75 and out["answer_correct"] == 0.6667 and out["no_plan_correct"] == 1.0
    assert out["filler_rate"] == 0.6 and "optional_written" not in out
    assert "filler_rate" not in aggregate([{"optional_written": 0.0, "optional_unsupported": 0.0}])

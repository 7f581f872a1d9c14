"""Observation: canonical hashes and bounded summaries for the planner."""

from __future__ import annotations

from executors.observation import NodeResult, canonical_json, sha256_json, summarize_output, summarize_result


def test_canonical_json_is_order_independent() -> None:
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'
    assert sha256_json({"a": 1, "b": 2}) == sha256_json({"b": 2, "a": 1})
    assert len(sha256_json(None)) == 64


def test_summary_shows_shape_and_a_bounded_excerpt() -> None:
    output = {
        "flights": [{"flight_id": f"F{i}", "airline": "X" * 500, "price": 100 + i} for i in range(50)],
        "cheapest": {"flight_id": "F0", "airline": "X" * 500, "price": 100, "nested": {"deep": True}},
        "count": 50,
        "note": "y" * 1000,
    }
    summary = summarize_output(output, max_chars=300)
    assert len(summary) <= 300
    assert summary.startswith("flights: 50 items (first: {flight_id='F0', price=100")
    assert "X" * 100 not in summary and "y" * 100 not in summary
    assert summarize_output([1, 2, 3]) == "list of 3, first: 1"
    assert summarize_output("short") == "'short'"


def test_result_summary_for_failures() -> None:
    failed = NodeResult(
        node_id="n1",
        tool="t",
        status="failed",
        error={"error": "timed out", "retryable": True, "type": "timeout"},
    )
    assert summarize_result(failed) == "failed (timeout, retryable): timed out"
    ok = NodeResult(node_id="n1", tool="t", status="succeeded", output={"count": 0}, reused_from="r0/n1")
    assert summarize_result(ok) == "reused; count=0"

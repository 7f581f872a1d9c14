"""Issue 19, item 1: every client structure is bounded before any check that can grow works on it, the
algorithms a client sizes are linear, and a refusal names the first few problems only. In-process,
deterministic: what is asserted is which bound answers and how large the answer is, not a duration."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest
from pydantic import ValidationError

from contract.plan import MAX_PLAN_NODES, Plan, PlanNode
from executors.stores.config import RunsConfig
from planner import safe_regex
from planner.catalog import MAX_REF_EXPANSIONS, CatalogError, ToolCatalog
from planner.rules import BusinessRules
from planner.validation import PlanValidator
from serving.door.bodies import parse_body
from serving.errors import InvalidRequestError
from serving.plans.protocol import PlanCreate
from serving.protocol import ChatCompletionRequest, compact_length
from serving.runs.protocol import RunCreate
from serving.stack import demo_catalog
from tests.reliability.door_helpers import huge_plan, pattern_tool, ref_bomb

TODAY = date(2026, 1, 1)


def refused(tools: list[dict[str, Any]]) -> CatalogError:
    with pytest.raises(CatalogError) as caught:
        ToolCatalog.from_openai(tools)
    return caught.value


def test_a_plan_is_refused_by_its_length_before_its_nodes_are_validated() -> None:
    with pytest.raises(ValidationError) as caught:
        Plan.model_validate(huge_plan(43_000))
    errors = caught.value.errors(include_url=False)
    assert len(errors) == 1 and "at most 99 items, got 43000" in errors[0]["msg"], errors[:2]
    assert Plan.model_json_schema()["properties"]["nodes"]["maxItems"] == MAX_PLAN_NODES
    with pytest.raises(ValidationError):  # the runs setting cannot promise more than a plan may hold
        RunsConfig(max_plan_nodes=MAX_PLAN_NODES + 1)


def test_the_duplicate_id_check_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ids.count(i)` for every node was quadratic in the plan's length: no list.count any more."""

    class NoCount(list[str]):
        def count(self, value: Any) -> int:
            raise AssertionError("list.count in a loop is quadratic")

    nodes = [PlanNode.model_validate(node) for node in huge_plan(5_000)["nodes"]]
    plan = Plan.model_construct(nodes=nodes)  # past the length bound on purpose: the check alone
    monkeypatch.setattr(Plan, "ids", lambda self: NoCount(node.id for node in self.nodes))
    validator = PlanValidator(demo_catalog(), BusinessRules([], TODAY), max_nodes=99)
    codes = [issue.code for issue in validator.check_dag(plan)]
    assert codes.count("duplicate_id") == 99 and "too_many_nodes" in codes


def test_self_referencing_definitions_are_bounded_while_they_expand() -> None:
    error = refused([ref_bomb(5)])
    assert "$ref" in str(error) and len(str(error)) < 500, str(error)[:300]  # was 4.4 MB after 18 s


def test_ref_expansions_are_counted_in_all_not_only_in_depth() -> None:
    """a1 → 4 × a2 → … → 4 × a6: within the depth bound, 4^5 expansions."""
    defs = {f"a{i}": {"anyOf": [{"$ref": f"#/$defs/a{i + 1}"}] * 4} for i in range(1, 6)}
    defs["a6"] = {"type": "string"}
    parameters = {"type": "object", "properties": {"x": {"$ref": "#/$defs/a1"}}, "$defs": defs}
    error = refused([{"type": "function", "function": {"name": "wide", "parameters": parameters}}])
    assert f"more than {MAX_REF_EXPANSIONS} $ref expansions" in str(error), str(error)


def test_the_argument_limit_is_checked_before_any_pattern_compiles() -> None:
    tool = pattern_tool(33, 400)
    tool["function"]["parameters"]["properties"]["a0"]["pattern"] = r"(x)\1"  # RE2 refuses it
    error = refused([tool])
    assert error.problems == ["tools[0].function.parameters.properties: at most 32 arguments, got 33"]


def test_costly_patterns_are_refused_by_their_compile_budget() -> None:
    error = refused([pattern_tool(32, 7)])  # 8,384 RE2 instructions each: the third crosses 20,000
    assert len(error.problems) == 1 and "RE2 instructions" in error.problems[0], error.problems
    with pytest.raises(safe_regex.UnsafePattern, match="RE2"):
        safe_regex.compile_pattern("\\pL{400}z")  # over the per-pattern memory budget, refused in milliseconds
    assert safe_regex.RE2_MAX_MEM <= 256 << 10 and safe_regex.program_size("^[a-z0-9._-]+@[a-z.]+$") < 100


def test_patterns_per_request_are_bounded() -> None:
    tools = [
        {"type": "function", "function": {"name": f"t{j}", "parameters": {"type": "object", "properties": {
            f"a{i}": {"type": "string", "pattern": f"^x{j}_{i}$"} for i in range(20)}}}}
        for j in range(8)
    ]  # fmt: skip
    error = refused(tools)
    assert any(f"more than {safe_regex.MAX_PATTERNS} patterns" in p for p in error.problems), error.problems


def test_definitions_enums_and_examples_are_bounded_before_meta_validation() -> None:
    big = {
        "type": "object",
        "properties": {"x": {"type": "array", "items": {"type": "integer"}, "default": list(range(6000))}},
    }
    assert "more than 5000 JSON values" in str(
        refused([{"type": "function", "function": {"name": "v", "parameters": big}}])
    )
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(60):
        deep = {"type": "array", "items": deep}
    nested = {"type": "object", "properties": {"x": deep}}
    assert "levels of nesting" in str(refused([{"type": "function", "function": {"name": "d", "parameters": nested}}]))
    examples = {"type": "object", "properties": {"x": {"type": "string", "examples": ["e"] * 300}}}
    assert "examples with 300 values" in str(
        refused([{"type": "function", "function": {"name": "e", "parameters": examples}}])
    )


def test_a_refusal_names_the_first_problems_only() -> None:
    tools = [{"type": "function", "function": {"name": f"bad name {i}"}} for i in range(128)]
    error = refused(tools)
    assert len(error.problems) <= 20 and "(and " in str(error) and len(str(error)) < 2000, str(error)[-200:]
    validator = PlanValidator(demo_catalog(), BusinessRules([], TODAY), max_nodes=10)
    args = {f"k{i}": f"$n{(i % 90) + 2}" for i in range(2000)}  # 2,000 dangling references
    report = validator.validate({"nodes": [{"id": "n1", "tool": "get_weather", "args": args}]})
    assert report.error is not None and len(str(report.error)) < 2000 and len(report.outcomes[1].issues) <= 20


def test_client_lists_are_refused_before_their_items_are_validated() -> None:
    with pytest.raises(ValidationError) as caught:
        ChatCompletionRequest.model_validate({"model": "m", "messages": [{}] * 100_000})
    assert len(caught.value.errors()) == 1 and "at most 4096 items" in caught.value.errors()[0]["msg"]
    with pytest.raises(ValidationError) as tools:
        PlanCreate.model_validate({"request": "x", "tools": [0] * 100_000})
    assert len(tools.value.errors()) == 1


def test_a_strict_model_names_the_first_unknown_field_without_validating_the_rest() -> None:
    body = json.dumps({f"k{i}": 0 for i in range(50_000)}).encode()
    with pytest.raises(InvalidRequestError) as caught:
        parse_body(RunCreate, body)
    assert caught.value.param == "k0" and "Extra inputs" in caught.value.message


def test_public_models_keep_only_the_names_of_unknown_fields() -> None:
    request = ChatCompletionRequest.model_validate(
        {"model": "m", "messages": [{"role": "user", "content": "x", "junk": [0] * 1000}], "padding": "y" * 100_000}
    )
    assert request.extras() == ["padding"] and request.model_extra == {"padding": None}
    assert request.messages[0].model_extra == {"junk": None}


def test_the_prompt_size_check_counts_no_further_than_the_limit() -> None:
    for value in ({"a": [1, {"b": 'x"y\\é'}], "c": None}, [[], [{}]], "ab\u2028", list(range(50))):
        exact = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
        assert compact_length(value) == exact == compact_length(value, 10**9)
        assert all((compact_length(value, limit) > limit) == (exact > limit) for limit in range(exact + 2))

from __future__ import annotations

import json
from datetime import date

import pytest

from planner.config import CONFIG_DIR
from planner.issues import Issue
from planner.rules import BusinessRules
from planner.validation import (
    ArgumentValidationError,
    BusinessRuleError,
    DagValidationError,
    PlanValidator,
    SchemaValidationError,
    find_cycle,
)
from tests.planner.helpers import FLIGHT, HOTEL, demo_catalog, node, plan

TODAY = date(2026, 11, 30)


@pytest.fixture
def validator() -> PlanValidator:
    rules = BusinessRules.from_yaml(CONFIG_DIR / "packs" / "travel" / "rules.yaml", TODAY)
    return PlanValidator(demo_catalog(), rules, max_nodes=4)


def codes(issues: tuple[Issue, ...] | list[Issue]) -> set[str]:
    return {i.code for i in issues}


def failing(validator: PlanValidator, candidate: object) -> tuple[str, set[str]]:
    report = validator.validate(candidate)  # type: ignore[arg-type]
    assert not report.ok and report.plan is None
    failed = [o for o in report.outcomes if o.status == "failed"]
    assert len(failed) == 1
    assert [o.status for o in report.outcomes].count("skipped") == 3 - report.outcomes.index(failed[0])
    return failed[0].layer, codes(failed[0].issues)


def test_valid_plan_passes_every_layer(validator: PlanValidator) -> None:
    good = {
        "nodes": [
            node("n1", "search_flights", FLIGHT),
            node("n2", "search_hotels", HOTEL),
            node("n3", "check_budget", {"amounts": ["$n1.cheapest.price", "$n2.best.price_per_night"], "limit": 5000}),
        ]
    }
    report = validator.validate(json.dumps(good))
    assert report.ok and report.plan is not None
    assert [o.status for o in report.outcomes] == ["passed"] * 4
    assert report.plan.edges() == {("n1", "n3"), ("n2", "n3")}


@pytest.mark.parametrize(
    ("candidate", "code"),
    [
        ("{not json", "invalid_json"),
        ({"nodes": [{"id": "x1", "tool": "get_weather"}]}, "schema"),
        ({"nodes": [], "extra": 1}, "schema"),
    ],
)
def test_schema_layer(validator: PlanValidator, candidate: object, code: str) -> None:
    assert failing(validator, candidate) == ("schema", {code})


@pytest.mark.parametrize(
    ("nodes", "code"),
    [
        (
            [
                node("n1", "get_weather", {"city": "$n2.city", "date": "2027-06-20"}),
                node("n2", "get_weather", {"city": "$n1.city", "date": "2027-06-20"}),
            ],
            "cycle",
        ),
        ([node("n1", "get_weather", {"city": "$n7.city", "date": "2027-06-20"})], "dangling_reference"),
        ([node("n1", "get_weather", {"city": "$n1.city", "date": "2027-06-20"})], "self_reference"),
        ([node("n1", "get_weather", {"city": "A", "date": "2027-06-20"}, depends_on=["n1"])], "self_dependency"),
        ([node("n1", "get_weather", {"city": "A", "date": "2027-06-20"}, depends_on=["n5"])], "unknown_dependency"),
        ([node("n1", "get_weather", {"city": "A", "date": "2027-06-20"}, fallback="n9")], "bad_fallback"),
        ([node("n1", "get_weather", {"city": "A", "date": "2027-06-20"})] * 2, "duplicate_id"),
        ([node(f"n{i}", "get_weather", {"city": "A", "date": "2027-06-20"}) for i in range(1, 6)], "too_many_nodes"),
        ([], "empty_plan"),
    ],
)
def test_dag_layer(validator: PlanValidator, nodes: list[dict[str, object]], code: str) -> None:
    layer, found = failing(validator, {"nodes": nodes})
    assert layer == "dag" and code in found


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        (node("n1", "book_rocket", {}), "unknown_tool"),
        (node("n1", "get_weather", {"city": "A", "date": "2027-06-20", "unit": "C"}), "unknown_argument"),
        (node("n1", "get_weather", {"city": 3, "date": "2027-06-20"}), "bad_anyOf"),
        (node("n1", "get_weather", {"date": "2027-06-20"}), "bad_required"),
        (node("n1", "quote_catering", {"venue_id": "V1", "guests": 10, "menu": "sushi"}), "bad_anyOf"),
    ],
)
def test_argument_layer(validator: PlanValidator, bad: dict[str, object], code: str) -> None:
    layer, found = failing(validator, {"nodes": [bad]})
    assert layer == "arguments" and code in found


def test_references_are_allowed_where_values_are_expected(validator: PlanValidator) -> None:
    ok = plan(
        node("n1", "search_venues", {"city": "Hangzhou", "date": "2027-06-20", "capacity": 50}),
        node("n2", "quote_catering", {"venue_id": "$n1.best.venue_id", "guests": "$n1.best.capacity"}),
    )
    assert validator.validate(ok).ok


@pytest.mark.parametrize(
    ("nodes", "code"),
    [
        ([node("n1", "search_hotels", {**HOTEL, "check_out": "2027-06-19"})], "date_order"),
        ([node("n1", "search_hotels", {**HOTEL, "check_out": "2027-09-19"})], "date_span"),
        ([node("n1", "get_weather", {"city": "A", "date": "2025-01-01"})], "date_in_past"),
        ([node("n1", "get_weather", {"city": "A", "date": "2027-02-30"})], "bad_date"),
        ([node("n1", "check_budget", {"amounts": [1], "limit": 5_000_000})], "above_max"),
        (
            [
                node("n1", "search_venues", {"city": "A", "date": "2027-06-20", "capacity": 50}),
                node("n2", "quote_catering", {"venue_id": "$n1.best.venue_id", "guests": 80}),
            ],
            "over_capacity",
        ),
    ],
)
def test_business_rules(validator: PlanValidator, nodes: list[dict[str, object]], code: str) -> None:
    layer, found = failing(validator, {"nodes": nodes})
    assert layer == "rules" and code in found


def test_errors_are_typed_and_model_readable(validator: PlanValidator) -> None:
    cases = [
        ("{", SchemaValidationError),
        ({"nodes": []}, DagValidationError),
        ({"nodes": [node("n1", "nope")]}, ArgumentValidationError),
        ({"nodes": [node("n1", "get_weather", {"city": "A", "date": "2020-01-01"})]}, BusinessRuleError),
    ]
    for candidate, error_type in cases:
        error = validator.validate(candidate).error  # type: ignore[arg-type]
        assert isinstance(error, error_type) and error.retryable
        feedback = json.loads(error.feedback())
        assert feedback["layer"] == error.layer and feedback["errors"][0]["message"]


def test_unknown_rule_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown business rule"):
        BusinessRules([{"kind": "vibes"}], TODAY)


def test_find_cycle_through_depends_on() -> None:
    cyclic = plan(
        node("n1", "get_weather", depends_on=["n3"]),
        node("n2", "get_weather", depends_on=["n1"]),
        node("n3", "get_weather", depends_on=["n2"]),
    )
    assert find_cycle(cyclic)[0] == find_cycle(cyclic)[-1]
    assert find_cycle(plan(node("n1", "get_weather"), node("n2", "get_weather", depends_on=["n1"]))) == []


def test_a_reference_the_model_wrote_to_its_own_node_makes_the_retry_stricter(validator: PlanValidator) -> None:
    from planner.retries import RetryPlan
    from planner.values import extract

    request = "Flights from Shanghai to Hangzhou on 2027-06-20"
    bad = {"nodes": [node("n1", "search_flights", {**FLIGHT, "origin": "$n1.flights.0.origin"})]}
    report = validator.validate(bad)
    assert report.error is not None and codes(report.error.issues) == {"self_reference"}
    retry = RetryPlan("grounded").after_invalid_plan(bad, report, extract(request, TODAY), "")
    assert retry.grounding == "strict" and not retry.use_skeleton  # request values and offered references only

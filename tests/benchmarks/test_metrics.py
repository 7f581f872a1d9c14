from __future__ import annotations

import pytest

from benchmarks.metrics import align, f1, score
from contract.plan import Plan


def P(*nodes: tuple[str, str, dict[str, object]]) -> Plan:  # noqa: N802
    return Plan.model_validate({"nodes": [{"id": i, "tool": t, "args": a} for i, t, a in nodes]})


FLIGHT = ("n1", "search_flights", {"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20"})
HOTEL = ("n2", "search_hotels", {"city": "Hangzhou", "check_in": "2027-06-20", "check_out": "2027-06-22"})
BUDGET = ("n3", "check_budget", {"amounts": ["$n1.cheapest.price", "$n2.best.price_per_night"], "limit": 5000})
GOLD = P(FLIGHT, HOTEL, BUDGET)


def test_identical_plans_score_one() -> None:
    s = score(GOLD, GOLD)
    assert s.as_dict() == {
        "schema_valid": 1,
        "node_f1": 1,
        "edge_f1": 1,
        "arg_name_f1": 1,
        "arg_value_acc": 1,
        "full_match": 1,
    }


def test_renumbered_plan_still_matches_through_alignment() -> None:
    swapped = P(
        ("n1", "search_hotels", HOTEL[2]),
        ("n2", "search_flights", FLIGHT[2]),
        ("n3", "check_budget", {"amounts": ["$n2.cheapest.price", "$n1.best.price_per_night"], "limit": 5000}),
    )
    assert score(swapped, GOLD).full_match == 1.0


def test_invalid_and_empty_plans() -> None:
    assert score(None, GOLD).as_dict() == dict.fromkeys(score(None, GOLD).as_dict(), 0.0)
    empty = score(P(), GOLD)
    assert empty.schema_valid == 1 and empty.node_f1 == 0 and empty.arg_value_acc == 0 and empty.full_match == 0
    assert score(P(), P()).node_f1 == 1.0 and score(P(), P()).full_match == 1.0
    assert f1([], []) == 1.0 and f1(["a"], []) == 0.0


def test_missing_node_and_edges() -> None:
    s = score(P(FLIGHT, HOTEL), GOLD)
    assert s.node_f1 == pytest.approx(0.8)  # P=1, R=2/3
    assert s.edge_f1 == 0.0  # gold has 2 edges, prediction none
    assert s.arg_value_acc == pytest.approx(6 / 8)
    assert s.full_match == 0


def test_extra_edge_lowers_edge_f1() -> None:
    extra = P(FLIGHT, ("n2", "search_hotels", {**HOTEL[2], "city": "$n1.cheapest.destination"}), BUDGET)
    s = score(extra, GOLD)
    assert s.edge_f1 == pytest.approx(0.8)  # 2 of 3 predicted edges right, both gold edges found
    assert s.arg_value_acc == pytest.approx(7 / 8)


def test_duplicate_tools_multiset() -> None:
    gold = P(("n1", "get_weather", {"city": "A", "date": "d"}), ("n2", "get_weather", {"city": "B", "date": "d"}))
    pred = P(("n1", "get_weather", {"city": "A", "date": "d"}))
    s = score(pred, gold)
    assert s.node_f1 == pytest.approx(2 / 3) and s.arg_value_acc == pytest.approx(0.5)
    assert align(pred, gold) == {"n1": "n1"}
    triple = P(*((f"n{i}", "get_weather", {"city": "A", "date": "d"}) for i in range(1, 4)))
    assert score(triple, gold).node_f1 == pytest.approx(0.8)


def test_argument_names_and_values_are_normalised() -> None:
    pred = P(
        (
            "n1",
            "search_flights",
            {"origin": " shanghai", "destination": "HANGZHOU", "date": "2027-06-20", "max_price": 900},
        )
    )
    s = score(pred, P(FLIGHT))
    assert s.arg_value_acc == 1.0 and s.arg_name_f1 == pytest.approx(6 / 7) and s.full_match == 0


def test_extra_node_lowers_precision_only() -> None:
    extra = P(FLIGHT, HOTEL, BUDGET, ("n4", "get_weather", {"city": "Hangzhou", "date": "2027-06-20"}))
    s = score(extra, GOLD)
    assert s.node_f1 == pytest.approx(6 / 7)  # P=3/4, R=1
    assert s.edge_f1 == 1.0 and s.arg_value_acc == 1.0 and s.full_match == 0


def test_edge_to_an_unaligned_node_cannot_match() -> None:
    gold = P(FLIGHT, ("n2", "get_weather", {"city": "$n1.cheapest.destination", "date": "2027-06-20"}))
    pred = P(
        ("n1", "search_trains", {"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20"}),
        ("n2", "get_weather", {"city": "$n1.cheapest.destination", "date": "2027-06-20"}),
    )
    s = score(pred, gold)
    assert s.node_f1 == pytest.approx(0.5) and s.edge_f1 == 0.0
    assert s.arg_value_acc == pytest.approx(1 / 5)  # only the weather date: the reference points elsewhere


def test_depends_on_edges_count_like_references() -> None:
    gold = P(FLIGHT, HOTEL)
    ordered = Plan.model_validate(
        {
            "nodes": [
                {"id": "n1", "tool": FLIGHT[1], "args": FLIGHT[2]},
                {**dict(zip(("id", "tool", "args"), HOTEL, strict=True)), "depends_on": ["n1"]},
            ]
        }
    )
    s = score(ordered, gold)
    assert s.edge_f1 == 0.0 and s.node_f1 == 1.0 and s.full_match == 0  # one spurious edge, gold has none
    assert score(P(FLIGHT), P(FLIGHT)).edge_f1 == 1.0  # no edges on either side: 1.0


def test_wrong_tools_score_zero_but_stay_schema_valid() -> None:
    s = score(P(("n1", "get_weather", {"city": "Hangzhou", "date": "2027-06-20"})), P(FLIGHT))
    assert s.schema_valid == 1 and s.node_f1 == 0 and s.arg_name_f1 == 0 and s.arg_value_acc == 0


def test_mean_scores_averages_each_metric() -> None:
    from benchmarks.metrics import mean_scores

    means = mean_scores([score(GOLD, GOLD), score(None, GOLD)])
    assert means["node_f1"] == 0.5 and means["full_match"] == 0.5 and mean_scores([]) == {}

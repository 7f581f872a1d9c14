"""Reference resolution: typed values, nested paths, list indexes, clear errors."""

from __future__ import annotations

from typing import Any

import pytest

from executors.errors import ReferenceResolutionError
from executors.references import resolve_args

OUTPUTS: dict[str, Any] = {
    "n1": {"cheapest": {"price": 960, "flight_id": "MU5130"}, "flights": [{"price": 960}, {"price": 1180}], "count": 2},
    "n2": {"best": None, "count": 0},
}


def lookup(node_id: str) -> Any:
    return OUTPUTS[node_id]


def test_values_keep_their_type_and_nesting() -> None:
    args: dict[str, Any] = {
        "amounts": ["$n1.cheapest.price", "$n1.flights.1.price", 100],
        "whole": "$n1",
        "nested": {"id": "$n1.cheapest.flight_id"},
        "text": "not a $n1 reference",
    }
    resolved = resolve_args(args, lookup)
    assert resolved == {
        "amounts": [960, 1180, 100],
        "whole": OUTPUTS["n1"],
        "nested": {"id": "MU5130"},
        "text": "not a $n1 reference",
    }
    assert args["amounts"][0] == "$n1.cheapest.price"  # the plan's args are not modified


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("$n1.cheapest.currency", "field 'currency' is missing in $n1.cheapest"),
        ("$n1.flights.first", "$n1.flights is a list; 'first' is not an index"),
        ("$n1.flights.5.price", "index 5 is out of range ($n1.flights has 2 items)"),
        ("$n1.count.value", "cannot take field 'value' of $n1.count, which is int"),
        ("$n2.best.price_per_night", "cannot take field 'price_per_night' of $n2.best, which is null"),
        ("$n3.x", "node n3 has no output"),
    ],
)
def test_errors_name_the_missing_piece(reference: str, message: str) -> None:
    with pytest.raises(ReferenceResolutionError) as info:
        resolve_args({"x": reference}, lookup)
    assert message in info.value.message
    assert info.value.structured()["type"] == "reference_error" and info.value.retryable is False

"""Retellings of the realistic set (benchmarks/retell.py): other values, the same structure, a consistent gold."""

from __future__ import annotations

from benchmarks import apis
from benchmarks.retell import retell, retold


def case(request: str, nodes: list[dict], expect: apis.Expect = "plan") -> apis.ApiCase:
    return apis.ApiCase("x-01", "x", "en", "x.t", "dev", request, ("a", "b"), expect, {"nodes": nodes})


def test_values_stated_verbatim_are_swapped_in_the_request_and_the_gold_alike() -> None:
    nodes = [
        {"id": "n1", "tool": "contacts_search", "args": {"email": "ana@acme.io"}},
        {"id": "n2", "tool": "notes_create", "args": {"contact": "$n1.id", "title": "Kickoff notes",
                                                     "project": "1201987654321"}},
    ]  # fmt: skip
    told = retell(case("Find ana@acme.io and add a note 'Kickoff notes' to project 1201987654321", nodes))
    assert told is not None and told.id == "x-01~r" and told.template == "x.t" and told.split == "dev"
    args = [n["args"] for n in told.plan["nodes"]]
    assert args[0]["email"] != "ana@acme.io" and args[0]["email"] in told.request
    assert args[1]["title"] != "Kickoff notes" and f"'{args[1]['title']}'" in told.request
    assert (
        args[1]["project"] != "1201987654321" and len(args[1]["project"]) == 13 and args[1]["project"] in told.request
    )
    assert args[1]["contact"] == "$n1.id"  # references and tools are the structure: unchanged
    assert [n["tool"] for n in told.plan["nodes"]] == ["contacts_search", "notes_create"]


def test_a_value_the_gold_writes_differently_is_left_as_it_was() -> None:
    nodes = [{"id": "n1", "tool": "refund", "args": {"amount": 2550, "date": "2027-03-03"}}]
    assert retell(case("Refund 25.50 EUR on March 3, 2027", nodes)) is None  # nothing verbatim: no retelling
    nodes = [{"id": "n1", "tool": "rename", "args": {"id": "C-123456", "name": "Team A"}}]
    told = retell(case("Rename 'Team A' (C-123456, created 2027-01-15)", nodes))
    assert told is not None and "2027-01-15" in told.request  # an ISO date is no identifier


def test_two_values_never_get_the_same_replacement_and_the_set_is_stable() -> None:
    nodes = [{"id": "n1", "tool": "lists_insert", "args": {"title": "Alpha"}},
             {"id": "n2", "tool": "tasks_insert", "args": {"list": "$n1.id", "title": "Beta"}}]  # fmt: skip
    told = retell(case("Create list 'Alpha' with the task 'Beta'", nodes))
    assert told is not None
    first, second = (n["args"]["title"] for n in told.plan["nodes"])
    assert first != second and first not in ("Alpha", "Beta") and second not in ("Alpha", "Beta")
    again = retold([case("Create list 'Alpha' with the task 'Beta'", nodes)])
    assert again == [told]

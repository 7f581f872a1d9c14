"""Data set adapters of the harness: our jsonl format and NESTFUL (specs → tools, `$varN.x$` → edges)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from benchmarks import nestful
from benchmarks.harness.datasets import TRAVEL, load_jsonl, load_nestful, sha256_file
from benchmarks.harness.demos import ExampleIndex

SPECS = [
    {
        "name": "Hotels.Search",
        "description": "Find hotels in a city.",
        "arguments": {
            "city": {"description": "City", "required": True},
            "stars": {"description": "Rating", "required": False, "allowed_values": [3, 4, 5]},
        },
        "output_parameters": {"hotel_id": {"description": "id"}, "name": {"description": "name"}},
    },
    {
        "name": "Hotels.Reserve",
        "description": "Reserve a hotel.",
        "arguments": {"hotel_id": {"required": True}, "note": {"required": False}},
        "output_parameters": {},
    },
]
RECORDS = [
    {
        "input": "Find a 4-star hotel in Rome and book it.",
        "output": [
            {"name": "Hotels.Search", "arguments": {"city": "Rome", "stars": "4"}, "label": "var1"},
            {
                "name": "Hotels.Reserve",
                "arguments": {"hotel_id": "$var1.hotel_id$", "note": "for $var1.name$"},
                "label": "var2",
            },
            {"name": "var_result", "arguments": {"booking": "$var2$"}},
        ],
    },
    {
        "input": "Any hotel in Oslo?",
        "output": [{"name": "Hotels.Search", "arguments": {"city": "Oslo"}, "label": "var1"}],
    },
]


@pytest.fixture
def nestful_root(tmp_path: Path) -> Path:
    (tmp_path / "non-executable-toy-data.json").write_text(json.dumps(RECORDS))
    (tmp_path / "non-executable-toy-spec.json").write_text(json.dumps(SPECS + SPECS[:1]))  # a duplicate spec
    return tmp_path


def test_nestful_records_become_plans_with_edges(nestful_root: Path) -> None:
    data = load_nestful("toy", root=nestful_root)
    assert data.name == "nestful-toy" and len(data.cases) == 2 and not data.executable
    first = data.cases[0].gold
    assert [n.tool for n in first.nodes] == ["Hotels.Search", "Hotels.Reserve"]  # var_result dropped
    assert first.node("n2").args["hotel_id"] == "$n1.hotel_id"  # full reference → our reference
    assert first.node("n2").args["note"] == "for $var1.name$" and first.node("n2").depends_on == ["n1"]
    assert first.edges() == {("n1", "n2")} and data.cases[1].size == 1
    assert data.describe()["plan_sizes"] == {1: 1, 2: 1}
    digest = hashlib.sha256((nestful_root / "non-executable-toy-data.json").read_bytes()).hexdigest()
    assert digest in data.hashes.values() and len(data.hashes) == 2


def test_nestful_specs_become_openai_tools(nestful_root: Path) -> None:
    tools = load_nestful("toy", root=nestful_root).tools
    assert tools is not None and [t["function"]["name"] for t in tools] == ["Hotels.Search", "Hotels.Reserve"]
    params = tools[0]["function"]["parameters"]
    assert params["required"] == ["city"] and params["properties"]["stars"]["enum"] == ["3", "4", "5"]
    assert tools[0]["function"]["output_schema"]["properties"].keys() == {"hotel_id", "name"}


def test_real_nestful_sgd_split_converts_if_present() -> None:
    if not (nestful.DEFAULT_ROOT / "non-executable-sgd-data.json").exists():
        pytest.skip("../shared/benchmarks/nestful is not there")
    data = load_nestful("sgd", limit=3)
    assert data.total == 46 and len(data.cases) == 3
    gold = data.cases[0].gold
    assert gold.node("n2").args["pickup_location"] == "$n1.pickup_location" and ("n1", "n2") in gold.edges()


def test_jsonl_dataset_has_today_hashes_and_limit() -> None:
    data = load_jsonl(TRAVEL, limit=5)
    assert len(data.cases) == 5 and data.total == 64 and data.executable and data.tools is None
    assert data.today is not None and data.today.isoformat() == "2026-11-30"
    assert data.hashes["benchmarks/datasets/travel_meeting.jsonl"] == sha256_file(TRAVEL)
    assert data.demos_path is not None and data.demos_path.name == "demonstrations.jsonl"


def test_example_index_grows_and_leaves_the_request_out() -> None:
    plan = {"nodes": [{"id": "n1", "tool": "get_weather", "args": {"city": "Rome"}}]}
    index = ExampleIndex([("weather in Rome tomorrow", plan)], leave_one_out=True)
    assert index.search("weather in Rome tomorrow", 1) == []  # its own gold plan is hidden
    index.add("weather in Rome next week", plan)
    assert len(index) == 2 and index.nearest_plan("weather in Rome tomorrow") == plan
    assert ExampleIndex().nearest_plan("anything") is None

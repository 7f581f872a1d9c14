"""The served model as a plan step (`llm_generate`, `llm_extract`, the reserved toolset `llm`).

Through the real gateway in front of the FAKE upstream (marker fake_upstream): what the engine is sent
(the run tenant's server-side cache salt, the step's bounded max_tokens, `llm_extract`'s schema as the
structured output after the schema guard, the earlier output as the input) and what the node keeps.
On the REAL engine (marker engine): an `llm_extract` step whose input is a reference to an earlier
step's output returns an object under the schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import KEY_B, RunningGateway
from tests.toolsets.conftest import ToolsetGateway

CITY_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
    "required": ["city", "country"],
    "additionalProperties": False,
}


def steps_plan(text: str) -> dict[str, Any]:
    return {
        "nodes": [
            {"id": "n1", "tool": "llm_generate", "args": {"instruction": "Name the city in one sentence.", "input": text, "max_tokens": 4000}},
            {"id": "n2", "tool": "llm_extract", "args": {"instruction": "Extract the city and its country.", "input": "$n1.text", "json_schema": CITY_SCHEMA}},
        ]
    }  # fmt: skip


@pytest.mark.fake_upstream
@pytest.mark.slow
def test_steps_are_engine_requests_of_the_runs_tenant(gateway_factory: Callable[..., ToolsetGateway]) -> None:
    gateway = gateway_factory(tools={"llm": {"max_tokens": 64}})
    gateway.behaviour.replies = ["The city is Lyon, in France.", '{"city": "Lyon", "country": "France"}'] * 2
    salts = []
    for key in (None, KEY_B):
        with gateway.client(key) if key else gateway.client() as client:
            created = client.post("/v1/runs", json={"request": "city", "toolsets": ["llm"], "plan": steps_plan("I live in Lyon.")})
            assert created.status_code == 202, created.text
            view = gateway.wait_status(created.json()["run_id"], "succeeded", "failed", key=key or "key-tenant-a-000")
        assert view["status"] == "succeeded", view["error"]
        outputs = {r["node_id"]: r["output"] for r in view["nodes"]}
        assert outputs["n1"]["text"].strip() == "The city is Lyon, in France."
        assert outputs["n2"] == {"city": "Lyon", "country": "France"}
        generate, extract = gateway.behaviour.received[-2:]
        assert generate["max_tokens"] == 64  # the operator's cap, not the plan's 4000
        assert "I live in Lyon." in generate["messages"][-1]["content"] and "structured_outputs" not in generate
        assert extract["structured_outputs"] == {"json": CITY_SCHEMA}
        assert "The city is Lyon, in France." in extract["messages"][-1]["content"]  # $n1.text, resolved
        assert generate["cache_salt"] == extract["cache_salt"]
        salts.append(generate["cache_salt"])
    assert salts[0] != salts[1]  # each run is salted with its own tenant's salt


@pytest.mark.fake_upstream
@pytest.mark.slow
def test_a_schema_the_guard_refuses_fails_the_step_without_an_engine_call(gateway: ToolsetGateway) -> None:
    huge: dict[str, Any] = {"type": "string"}
    for _ in range(20):  # deeper than schema_guard.max_depth
        huge = {"type": "object", "properties": {"a": huge}}
    plan = {"nodes": [{"id": "n1", "tool": "llm_extract", "args": {"instruction": "x", "input": "y", "json_schema": huge}}]}
    with gateway.client() as client:
        created = client.post("/v1/runs", json={"request": "x", "toolsets": ["llm"], "plan": plan})
        assert created.status_code == 202, created.text
        view = gateway.wait_status(created.json()["run_id"], "succeeded", "failed")
    n1 = view["nodes"][0]
    assert n1["error"]["type"] == "invalid_arguments" and n1["attempts"] == 1
    assert gateway.behaviour.received == []


@pytest.mark.engine
def test_llm_extract_on_the_real_engine(gateway_factory_engine: Callable[..., RunningGateway]) -> None:
    gateway = gateway_factory_engine(executors={"max_replans": 0}, tools={"llm": {"max_tokens": 128}})
    plan = {
        "nodes": [
            {"id": "n1", "tool": "lookup_knowledge", "args": {"query": "hotel cap in Tokyo"}},
            {"id": "n2", "tool": "llm_extract", "args": {
                "instruction": "Which city is the best passage about?",
                "input": "$n1.top",
                "json_schema": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Hangzhou", "Tokyo", "Paris"]}}, "required": ["city"], "additionalProperties": False},
            }},
        ]
    }  # fmt: skip
    with gateway.client() as client:
        created = client.post("/v1/runs", json={"request": "which city", "toolsets": ["builtin", "llm"], "plan": plan, "wait": True})
        assert created.status_code == 200, created.text
        view = created.json()
    assert view["status"] == "succeeded", json.dumps(view["error"])
    extracted = next(r for r in view["nodes"] if r["node_id"] == "n2")["output"]
    assert set(extracted) == {"city"} and extracted["city"] in ("Hangzhou", "Tokyo", "Paris")  # decoded under the schema
    assert "Tokyo" in next(r for r in view["nodes"] if r["node_id"] == "n1")["output"]["top"]

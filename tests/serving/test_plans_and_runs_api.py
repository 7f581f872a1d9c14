"""/v1/plans, the `planner` chat model and /v1/runs through a real gateway.

The upstream here is the FAKE one (marker fake_upstream): it cannot write plans, so every planned
request must come back from the rule-based fallback — and say so. Runs of given plans execute the
real demo tools, store and scheduler.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from planner.config import PlannerConfig
from tests.conftest import KEY_A, KEY_B, FakeStack

pytestmark = pytest.mark.fake_upstream

TRIP = {
    "nodes": [
        {"id": "n1", "tool": "search_flights", "args": {"origin": "Shanghai", "destination": "Hangzhou", "date": "2027-06-20"}},
        {"id": "n2", "tool": "search_hotels",
         "args": {"city": "Hangzhou", "check_in": "2027-06-20", "check_out": "2027-06-22", "near": "West Lake"}},
        {"id": "n3", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}},
        {"id": "n4", "tool": "check_budget", "args": {"amounts": ["$n1.cheapest.price", "$n2.best.price_per_night"],
                                                      "limit": 5000}},
    ]
}  # fmt: skip
REQUEST = "Flights Shanghai to Hangzhou on June 20, a hotel near West Lake for two nights, and the weather."


def test_plan_endpoint_reports_the_fallback_path_honestly(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        response = client.post("/v1/plans", json={"request": REQUEST})
        metrics = client.get("/metrics").text
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["path"] == "fallback" and body["fallback_reason"]
    assert body["attempts"], "the failed model attempts are part of the answer"
    tools = {node["tool"] for node in body["plan"]["nodes"]}
    assert tools and tools <= {"search_flights", "search_hotels", "get_weather", "check_budget", "lookup_knowledge"}
    assert body["validation"] is not None
    assert 'planstack_plans_total{path="fallback"} 1.0' in metrics


def test_plan_endpoint_rejects_bad_input(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        assert client.post("/v1/plans", json={"request": ""}).status_code == 400
        assert client.post("/v1/plans", json={"request": "x", "surprise": 1}).status_code == 400
        bad_tools = {"request": "x", "tools": [{"type": "function", "function": {"name": "bad name!"}}]}
        response = client.post("/v1/plans", json=bad_tools)
        assert response.status_code == 400 and response.json()["error"]["param"] == "tools"


def test_planner_model_on_chat_completions_returns_the_plan_as_content(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        body = {"model": "planner", "messages": [{"role": "user", "content": REQUEST}]}
        reply = client.post("/v1/chat/completions", json=body).json()
        plan = json.loads(reply["choices"][0]["message"]["content"])
        assert plan["nodes"] and reply["planstack"]["path"] == "fallback"
        salted = client.post("/v1/chat/completions", json={**body, "cache_salt": "mine"})
        assert salted.status_code == 400


def test_run_of_a_given_plan_executes_the_demo_tools(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        response = client.post("/v1/runs", json={"request": REQUEST, "plan": TRIP, "wait": True})
        assert response.status_code == 200, response.text
        run = response.json()
        assert run["status"] == "succeeded" and run["planner"] == {"path": "given"}
        nodes = {node["node_id"]: node for node in run["nodes"]}
        assert set(nodes) == {"n1", "n2", "n3", "n4"}
        assert all(node["status"] == "succeeded" for node in nodes.values())
        assert client.get(f"/v1/runs/{run['run_id']}").json()["status"] == "succeeded"
        with client.stream("GET", f"/v1/runs/{run['run_id']}/events") as stream:
            events = [line[7:] for line in stream.iter_lines() if line.startswith("event: ")]
    assert events[0] == "run_started" and "run_finished" in events and events[-1] == "done"
    assert events.count("node_finished") == 4


def test_runs_are_invisible_to_other_tenants(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client(KEY_A) as alice, fake_stack.gateway.client(KEY_B) as bob:
        run_id = alice.post("/v1/runs", json={"request": REQUEST, "plan": TRIP, "wait": True}).json()["run_id"]
        for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/events"):
            response = bob.get(path)
            assert response.status_code == 404 and response.json()["error"]["code"] == "run_not_found"
        assert bob.post(f"/v1/runs/{run_id}/resume").status_code == 404


def test_an_invalid_plan_is_refused_before_anything_runs(fake_stack: FakeStack) -> None:
    bad = {"nodes": [{"id": "n1", "tool": "launch_rocket", "args": {}}]}
    cycle = {"nodes": [{"id": "n1", "tool": "get_weather", "args": {"city": "$n2.city", "date": "2027-06-20"}},
                       {"id": "n2", "tool": "get_weather", "args": {"city": "$n1.city", "date": "2027-06-20"}}]}  # fmt: skip
    with fake_stack.gateway.client() as client:
        for plan in (bad, cycle):
            response = client.post("/v1/runs", json={"request": "x", "plan": plan})
            assert response.status_code == 400 and response.json()["error"]["param"] == "plan"
        assert client.get("/v1/runs/not-a-run-id").status_code == 400
        assert client.get("/v1/runs/run_0123456789abcdef").status_code == 404


MUSIC = [
    {
        "type": "function",
        "function": {
            "name": "play_song",
            "description": "Play a song by title",
            "parameters": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
        },
    }
]
NOTHING_FITS = "Reconcile the quarterly ledger of the Zurich subsidiary"


def test_nothing_fits_is_a_200_answer_on_every_surface(fake_stack_factory: Callable[..., FakeStack]) -> None:
    stack = fake_stack_factory(planner=PlannerConfig(selection={"no_fit_below": 0.5}))
    with stack.gateway.client() as client:
        plan = client.post("/v1/plans", json={"request": NOTHING_FITS, "tools": MUSIC})
        assert plan.status_code == 200, plan.text
        assert plan.json()["plan"] is None and plan.json()["path"] == "no_plan" and plan.json()["reason"]
        chat = client.post(
            "/v1/chat/completions",
            json={"model": "planner", "messages": [{"role": "user", "content": NOTHING_FITS}], "tools": MUSIC},
        )
        assert chat.status_code == 200, chat.text
        assert json.loads(chat.json()["choices"][0]["message"]["content"]) == {"nodes": []}
        assert chat.json()["planstack"]["reason"]
        run = client.post("/v1/runs", json={"request": NOTHING_FITS, "wait": True})
        assert run.status_code == 200, run.text
        assert run.json()["status"] == "no_plan" and run.json()["planner"]["path"] == "no_plan"
        assert client.get(f"/v1/runs/{run.json()['run_id']}").json()["status"] == "no_plan"


def test_a_missing_value_is_a_needs_input_answer_on_every_surface(fake_stack_factory: Callable[..., FakeStack]) -> None:
    """planner/results.py `needs_input`: the request leaves out a required value nothing can fill (here the
    amount of an invoice); the answer lists it instead of an invented one."""
    from tests.planner import real_catalogs as rc

    stack = fake_stack_factory()
    request = "Create an invoice for Umbrella Corp"
    with stack.gateway.client() as client:
        plan = client.post("/v1/plans", json={"request": request, "tools": rc.CRM})
        assert plan.status_code == 200, plan.text
        body = plan.json()
        assert body["plan"] is None and body["path"] == "needs_input" and "amount" in body["reason"]
        assert {(m["tool"], m["argument"]) for m in body["missing"]} == {("createInvoice", "amount")}
        chat = client.post(
            "/v1/chat/completions",
            json={"model": "planner", "messages": [{"role": "user", "content": request}], "tools": rc.CRM},
        )
        assert chat.status_code == 200, chat.text
        assert json.loads(chat.json()["choices"][0]["message"]["content"]) == {"nodes": []}
        assert chat.json()["planstack"]["path"] == "needs_input"
        assert chat.json()["planstack"]["missing"][0]["argument"] == "amount"

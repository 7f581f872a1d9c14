"""Feedback on plans, /v1/demonstrations and learning from runs, through a real gateway (FAKE upstream).

The fake upstream cannot write plans, so planned answers come from the fallback planner; what is under
test is what happens to them afterwards: plan ids, validation of what is stored, tenant scoping, and
the memory on disk across a gateway restart.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from contract.plan import Plan
from retrieval.memory_config import LearningConfig
from tests.conftest import KEY_A, KEY_B, FakeStack

pytestmark = pytest.mark.fake_upstream


def tool(name: str, description: str, **props: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {k: {"type": t} for k, t in props.items()}, "required": list(props)}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


TOOLS = [
    tool("get_weather", "Weather forecast for a city", city="string"),
    tool("send_email", "Send an email to someone", to="string", body="string"),
]
REQUEST = "Get the weather in Oslo and email it to ops@example.com"
GOLD = {
    "nodes": [
        {"id": "n1", "tool": "get_weather", "args": {"city": "Oslo"}},
        {"id": "n2", "tool": "send_email", "args": {"to": "ops@example.com", "body": "$n1"}},
    ]
}
UNKNOWN_TOOL = {"nodes": [{"id": "n1", "tool": "launch_rocket", "args": {"target": "moon"}}]}
TRIP = {"nodes": [{"id": "n1", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}}]}


def plan_id_of(client: Any) -> str:
    answer = client.post("/v1/plans", json={"request": REQUEST, "tools": TOOLS})
    assert answer.status_code == 200, answer.text
    plan_id = answer.json()["plan_id"]
    assert plan_id.startswith("plan_") and len(plan_id) == 29
    return str(plan_id)


def normal(plan: dict[str, Any]) -> dict[str, Any]:
    """A plan as it is stored: validated, defaults written out."""
    return Plan.model_validate(plan).model_dump(exclude_none=True)


def lines(*rows: dict[str, Any]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def test_feedback_stores_a_validated_plan_for_its_tenant_only(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client(KEY_A) as alice, fake_stack.gateway.client(KEY_B) as bob:
        plan_id = plan_id_of(alice)
        other = bob.post(f"/v1/plans/{plan_id}/feedback", json={"accepted": True})
        assert other.status_code == 404 and other.json()["error"]["code"] == "plan_not_found"
        assert bob.post(f"/v1/plans/{plan_id}/feedback", json={"corrected_plan": GOLD}).status_code == 404

        unknown = alice.post(f"/v1/plans/{plan_id}/feedback", json={"corrected_plan": UNKNOWN_TOOL})
        assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "corrected_plan"
        assert "launch_rocket" in unknown.json()["error"]["message"]
        assert alice.get("/v1/demonstrations").json()["data"] == []  # nothing stored

        stored = alice.post(f"/v1/plans/{plan_id}/feedback", json={"corrected_plan": GOLD})
        assert stored.status_code == 200, stored.text
        assert stored.json()["status"] == "added" and stored.json()["demonstration"]["origin"] == "feedback"
        again = alice.post(f"/v1/plans/{plan_id}/feedback", json={"corrected_plan": GOLD}).json()
        assert again["status"] == "duplicate"
        listed = alice.get("/v1/demonstrations").json()
        assert [d["request"] for d in listed["data"]] == [REQUEST] and listed["data"][0]["plan"] == normal(GOLD)
        assert listed["usage"]["count"] == 1
        assert bob.get("/v1/demonstrations").json()["data"] == []

        accepted = alice.post(f"/v1/plans/{plan_id_of(alice)}/feedback", json={"accepted": True})
        assert accepted.status_code == 200 and accepted.json()["status"] in ("added", "updated", "duplicate")
        rejected = alice.post(f"/v1/plans/{plan_id_of(alice)}/feedback", json={"accepted": False})
        assert rejected.json()["status"] == "rejected" and rejected.json()["demonstration"] is None


def test_feedback_input_is_checked(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        plan_id = plan_id_of(client)
        for body in (
            {},
            {"accepted": True, "corrected_plan": GOLD},
            {"accepted": True, "extra": 1},
            {"corrected_plan": 3},
        ):
            response = client.post(f"/v1/plans/{plan_id}/feedback", json=body)
            assert response.status_code == 400, (body, response.text)
        assert (
            client.post("/v1/plans/plan_000000000000000000000000/feedback", json={"accepted": True}).status_code == 404
        )
        assert client.post("/v1/plans/../etc/feedback", json={"accepted": True}).status_code in (400, 404)
        assert client.post("/v1/plans/not-an-id/feedback", json={"accepted": True}).status_code == 400
        bad_args = {"nodes": [{"id": "n1", "tool": "get_weather", "args": {"town": "Oslo"}}]}
        assert client.post(f"/v1/plans/{plan_id}/feedback", json={"corrected_plan": bad_args}).status_code == 400


def test_import_export_list_delete(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client(KEY_A) as alice, fake_stack.gateway.client(KEY_B) as bob:
        body = lines(
            {"tools": TOOLS},
            {"request": REQUEST, "plan": GOLD},
            {
                "request": "Weather in Lima",
                "plan": {"nodes": [{"id": "n1", "tool": "get_weather", "args": {"city": "Lima"}}]},
            },
            {"tools": None},  # back to the gateway's own tools
            {"request": "Weather in Hangzhou on 2027-06-20", "plan": TRIP},
        )
        imported = alice.post("/v1/demonstrations", content=body, headers={"Content-Type": "application/x-ndjson"})
        assert imported.status_code == 200, imported.text
        assert imported.json()["added"] == 3 and len(imported.json()["ids"]) == 3

        bad = lines(
            {"tools": TOOLS}, {"request": "fine", "plan": GOLD}, {"request": "to the moon", "plan": UNKNOWN_TOOL}
        )
        refused = alice.post("/v1/demonstrations", content=bad)
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "line 3"
        assert "launch_rocket" in refused.json()["error"]["message"]
        for hostile in (
            b"\xff\xfe",
            b"not json\n",
            b"[1]\n",
            b"",
            lines({"request": "x" * 5000, "plan": GOLD}).encode(),
        ):
            assert alice.post("/v1/demonstrations", content=hostile).status_code == 400
        assert alice.get("/v1/demonstrations").json()["usage"]["count"] == 3  # nothing of the refused imports

        exported = alice.get("/v1/demonstrations", params={"format": "jsonl"})
        assert exported.headers["content-type"].startswith("application/x-ndjson")
        rows = [json.loads(line) for line in exported.text.splitlines()]
        assert {r["request"] for r in rows} == {REQUEST, "Weather in Lima", "Weather in Hangzhou on 2027-06-20"}
        assert bob.get("/v1/demonstrations", params={"format": "jsonl"}).text == ""
        reimported = alice.post("/v1/demonstrations", content=lines({"tools": TOOLS}, *rows[:2])).json()
        assert reimported["duplicates"] == 2 and reimported["added"] == 0  # an export reads back as it was

        page = alice.get("/v1/demonstrations", params={"limit": 2}).json()
        assert len(page["data"]) == 2 and page["has_more"]
        demo_id = rows[0]["id"]
        assert bob.delete(f"/v1/demonstrations/{demo_id}").status_code == 404
        assert alice.delete(f"/v1/demonstrations/{demo_id}").json()["deleted"] is True
        assert alice.delete(f"/v1/demonstrations/{demo_id}").status_code == 404
        assert alice.delete("/v1/demonstrations/../../x").status_code in (400, 404)
        assert alice.get("/v1/demonstrations", params={"limit": 0}).status_code == 400


def test_memory_and_plan_ids_survive_a_gateway_restart(fake_stack_factory: Callable[..., FakeStack]) -> None:
    first = fake_stack_factory()
    with first.gateway.client() as client:
        plan_id = plan_id_of(client)
        client.post("/v1/demonstrations", content=lines({"tools": TOOLS}, {"request": "Weather in Lima", "plan": GOLD}))
    first.gateway.server.stop()
    second = fake_stack_factory()  # same home: the same indexes folder and SQLite run store
    with second.gateway.client() as client:
        assert [d["request"] for d in client.get("/v1/demonstrations").json()["data"]] == ["Weather in Lima"]
        after = client.post(f"/v1/plans/{plan_id}/feedback", json={"corrected_plan": GOLD})
        assert after.status_code == 200 and after.json()["status"] == "added"
        assert client.get("/v1/demonstrations").json()["usage"]["count"] == 2


def test_successful_runs_are_learned_when_the_tenant_enables_it(fake_stack_factory: Callable[..., FakeStack]) -> None:
    stack = fake_stack_factory(learning=LearningConfig(from_runs=["tenantA"]))
    request = "Weather in Hangzhou on 2027-06-20"
    with stack.gateway.client(KEY_A) as alice, stack.gateway.client(KEY_B) as bob:
        for client in (alice, bob):
            run = client.post("/v1/runs", json={"request": request, "plan": TRIP, "wait": True})
            assert run.status_code == 200 and run.json()["status"] == "succeeded", run.text
        learned = alice.get("/v1/demonstrations").json()["data"]
        assert [(d["request"], d["origin"], d["plan"]) for d in learned] == [(request, "run", normal(TRIP))]
        assert bob.get("/v1/demonstrations").json()["data"] == []  # tenantB did not enable it
        failing = {"nodes": [{"id": "n1", "tool": "get_weather", "args": {"city": "Atlantis", "date": "2027-06-20"}}]}
        run = alice.post("/v1/runs", json={"request": "Weather in Atlantis", "plan": failing, "wait": True}).json()
        assert run["status"] == "failed" and len(alice.get("/v1/demonstrations").json()["data"]) == 1


def test_plan_ids_on_every_planning_surface(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        chat = client.post(
            "/v1/chat/completions",
            json={"model": "planner", "messages": [{"role": "user", "content": REQUEST}], "tools": TOOLS},
        ).json()
        plan_id = chat["planstack"]["plan_id"]
        assert client.post(f"/v1/plans/{plan_id}/feedback", json={"accepted": True}).status_code == 200
        run = client.post("/v1/runs", json={"request": "Weather in Hangzhou on 2027-06-20", "wait": True}).json()
        assert run["planner"]["plan_id"].startswith("plan_")
        assert (
            client.post(f"/v1/plans/{run['planner']['plan_id']}/feedback", json={"accepted": True}).status_code == 200
        )

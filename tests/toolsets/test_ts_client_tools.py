"""Tools the calling app executes, and `ask_user`, through the real gateway's HTTP API: the run pauses in
`requires_action` with a `tool_call_required` event (node, tool, arguments) that the app reads from the
SSE stream it follows, answers with POST /v1/runs/{id}/tool_outputs, and the run goes on; also across a
gateway restart (answered to the new gateway, which continues the run). Outputs are checked against the
tool's output schema; a reported error fails the node; a call nobody answers in time fails like any
other node; another tenant's run is a 404."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import KEY_B
from tests.reliability.helpers import check_error_shape
from tests.toolsets.conftest import ToolsetGateway, sse_events

pytestmark = [pytest.mark.fake_upstream, pytest.mark.slow]
SHIP = {
    "type": "function",
    "function": {
        "name": "ship_parcel",
        "description": "Ship a parcel to an address (done by the calling app).",
        "parameters": {
            "type": "object",
            "properties": {"address": {"type": "string", "maxLength": 200}},
            "required": ["address"],
        },
        "output_schema": {
            "type": "object",
            "properties": {"tracking": {"type": "string", "pattern": "^TRK-[0-9]+$"}},
            "required": ["tracking"],
        },
    },
}
PLAN = {
    "nodes": [
        {"id": "n1", "tool": "ask_user", "args": {"question": "Where should the parcel go?"}},
        {"id": "n2", "tool": "ship_parcel", "args": {"address": "$n1.answer"}},
        {"id": "n3", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}},
    ]
}


def start(client: httpx.Client, plan: dict[str, Any] = PLAN) -> str:
    body = {"request": "ship a parcel", "toolsets": ["builtin", "ask_user"], "tools": [SHIP], "plan": plan}
    created = client.post("/v1/runs", json=body)
    assert created.status_code == 202, created.text
    return str(created.json()["run_id"])


def answer(client: httpx.Client, run_id: str, node_id: str, **body: Any) -> httpx.Response:
    return client.post(f"/v1/runs/{run_id}/tool_outputs", json={"node_id": node_id, **body})


def test_the_app_answers_while_following_the_stream(gateway: ToolsetGateway) -> None:
    with gateway.client() as client, gateway.client() as app:
        run_id = start(client)
        seen: list[tuple[str, dict[str, Any]]] = []
        with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
            kind = ""
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                    continue
                if not line.startswith("data: ") or kind in ("done", "error"):
                    continue
                event = json.loads(line[6:])
                seen.append((kind, event))
                if kind == "tool_call_required" and event["node_id"] == "n1":
                    assert event["data"]["question"] == "Where should the parcel go?" and event["data"]["kind"] == "ask_user"
                    assert answer(app, run_id, "n1", output={"answer": "12 Lake Road, Hangzhou"}).status_code == 200
                elif kind == "tool_call_required" and event["node_id"] == "n2":
                    assert event["data"]["arguments"] == {"address": "12 Lake Road, Hangzhou"}  # resolved
                    assert event["data"]["tool"] == "ship_parcel" and event["data"]["kind"] == "client"
                    bad = answer(app, run_id, "n2", output={"tracking": "nope"})
                    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_output"
                    check_error_shape(bad)
                    assert answer(app, run_id, "n2", output={"tracking": "TRK-42"}).status_code == 200
                elif kind == "run_finished":
                    break
        kinds = [kind for kind, _ in seen]
        assert kinds.count("tool_call_required") == 2 and kinds.count("tool_output_received") == 2
        assert seen[-1][1]["data"]["status"] == "succeeded"
        view = client.get(f"/v1/runs/{run_id}").json()
        outputs = {r["node_id"]: r["output"] for r in view["nodes"]}
        assert outputs["n2"] == {"tracking": "TRK-42"} and outputs["n3"]["city"] == "Hangzhou"
        assert [t["name"] for t in view["tools"]["client"]] == ["ship_parcel"] and view["tools"]["builtin"] is True
        late = answer(app, run_id, "n2", output={"tracking": "TRK-43"})
        assert late.status_code == 409 and late.json()["error"]["code"] == "not_awaiting_output"


def test_a_paused_run_is_answered_on_a_restarted_gateway(gateway: ToolsetGateway) -> None:
    with gateway.client() as client:
        run_id = start(client)
        paused = gateway.wait_status(run_id, "requires_action")
        assert [c["node_id"] for c in paused["action"]["calls"]] == ["n1"]
        listed = client.get("/v1/runs", params={"status": "requires_action"}).json()["data"]
        assert [r["run_id"] for r in listed] == [run_id]
    gateway.restart()
    with gateway.client() as client:
        assert gateway.wait_status(run_id, "requires_action")["status"] == "requires_action"  # still paused
        assert answer(client, run_id, "n1", output={"answer": "Pier 3"}).status_code == 200
        assert gateway.wait_status(run_id, "requires_action", "failed")["action"]["calls"][0]["node_id"] == "n2"
        assert answer(client, run_id, "n2", output={"tracking": "TRK-7"}).status_code == 200
        assert gateway.wait_status(run_id, "succeeded", "failed")["status"] == "succeeded"
        events = sse_events(client, run_id)
        assert [e["type"] for e in events].count("tool_call_required") == 2  # replayed from the store


def test_errors_timeouts_and_other_tenants(gateway_factory: Callable[..., ToolsetGateway]) -> None:
    gateway = gateway_factory(tools={"answer_timeout_s": 0.5})
    with gateway.client() as client, gateway.client(KEY_B) as bob:
        run_id = start(client)
        gateway.wait_status(run_id, "requires_action")
        for path, body in [
            (f"/v1/runs/{run_id}/tool_outputs", {"node_id": "n1", "output": {"answer": "x"}}),
            (f"/v1/runs/{run_id}", None),
        ]:
            stranger = bob.post(path, json=body) if body is not None else bob.get(path)
            assert stranger.status_code == 404, stranger.text
        assert answer(client, run_id, "n9", output={}).status_code == 409
        assert answer(client, run_id, "n1", output={"answer": 7}).status_code == 400  # not a string
        assert answer(client, run_id, "n1", output={"answer": "Dock 9"}).status_code == 200
        view = gateway.wait_status(run_id, "succeeded", "failed", timeout_s=30)
        n2 = next(r for r in view["nodes"] if r["node_id"] == "n2")
        assert view["status"] == "failed" and n2["error"]["type"] == "timeout"  # nobody shipped in 0.5 s

        failing = start(client)
        gateway.wait_status(failing, "requires_action")
        assert answer(client, failing, "n1", error="the user closed the window").status_code == 200
        view = gateway.wait_status(failing, "succeeded", "failed")
        n1 = next(r for r in view["nodes"] if r["node_id"] == "n1")
        assert n1["error"]["type"] == "client_error" and "closed the window" in n1["error"]["error"]
        assert next(r for r in view["nodes"] if r["node_id"] == "n2")["status"] == "skipped"

        no_tools = client.post("/v1/runs", json={"request": "x", "tools": [{"type": "function", "function": {"name": "1bad"}}]})
        assert no_tools.status_code == 400 and no_tools.json()["error"]["code"] == "invalid_tools"
        evil = dict(SHIP, function={**SHIP["function"], "parameters": {"type": "object", "properties": {"a": {"type": "string", "pattern": "(a|a)*\\1"}}}})
        refused = client.post("/v1/runs", json={"request": "x", "tools": [evil], "plan": PLAN})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_tools"

"""Approvals, escalations, webhooks and the run list through a REAL gateway (uvicorn on loopback; the
fake upstream stands in for the engine, which no given plan needs): a run with an approval-required
tool pauses, survives a gateway restart while paused, and continues after approve (the tool runs
once) or stops after reject (it never runs); an escalated run is queued and resumes; a webhook
receiver on loopback gets signed, retried events; only an approver key of the run's tenant decides (the
application's own key gets 403, the decision records the deciding key's id), within the tenant's cap of
runs executing; another tenant can neither approve nor see."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response

from serving.ui import STATIC
from tests.conftest import KEY_A, KEY_A_APPROVER, KEY_B, KEY_B_APPROVER
from tests.fakes.upstream import ServerThread
from tests.reliability.helpers import check_error_shape, sse_events
from tests.ui.conftest import FAST, METRICS_TOKEN, SteeringStack
from tests.ui.helpers import booking_plan

pytestmark = pytest.mark.fake_upstream


def start(stack: SteeringStack, plan: dict[str, Any], key: str = KEY_A, **extra: Any) -> str:
    with stack.client(key) as client:
        created = client.post("/v1/runs", json={"request": "book a hotel by West Lake", "plan": plan, **extra})
    assert created.status_code == 202, created.text
    return str(created.json()["run_id"])


def test_a_paused_run_survives_a_restart_and_runs_the_tool_once_after_approval(stack: SteeringStack) -> None:
    run_id = start(stack, booking_plan())
    paused = stack.wait_status(run_id, "awaiting_approval")
    assert paused["status"] == "awaiting_approval"
    held = paused["approval"]["pending"]["calls"]
    assert [(c["tool"], c["args"]) for c in held] == [("book_hotel", {"hotel": "West Lake Inn", "price": 100})]
    assert stack.calls.counts["book:West Lake Inn"] == 0
    stack.restart()  # a new gateway process on the same store; its takeover sweep runs every 0.2 s
    time.sleep(2.5)  # past the lease TTL (2 s): a running run would have been taken over by now
    with stack.client() as client, stack.client(KEY_B_APPROVER) as bob, stack.client(KEY_A_APPROVER) as ops:
        assert client.get(f"/v1/runs/{run_id}").json()["status"] == "awaiting_approval"
        for verb in ("approve", "reject"):  # another tenant (even its approver) can neither decide nor see
            response = bob.post(f"/v1/runs/{run_id}/{verb}", json={"name": "mallory"})
            check_error_shape(response)
            assert response.status_code == 404 and response.json()["error"]["code"] == "run_not_found"
        assert bob.get(f"/v1/runs/{run_id}").status_code == 404
        assert bob.get("/v1/runs").json()["data"] == []
        decided = ops.post(f"/v1/runs/{run_id}/approve", json={"name": "Ops <b>Alice</b>\n\x00"})
        assert decided.status_code == 200, decided.text
        by = decided.json()["decision"]["by"]
        assert (by["tenant"], by["name"]) == ("tenantA", "Ops b Alice b") and by["key_id"].startswith("key_")
        again = ops.post(f"/v1/runs/{run_id}/approve", json={})
        assert again.status_code == 409 and again.json()["error"]["code"] == "not_awaiting_approval"
        final = stack.wait_status(run_id, "succeeded", "failed")
        with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
            events = sse_events(list(stream.iter_lines()))
        assert client.get("/metrics").status_code == 401  # a tenant's key is not the metrics token
        metrics = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text
    assert final["status"] == "succeeded", final["error"]
    assert stack.calls.counts["book:West Lake Inn"] == 1 and stack.calls.counts["search"] == 1
    kinds = [kind for kind, _ in events]
    assert kinds.count("awaiting_approval") == 1 and kinds.count("approval_decided") == 1
    decision = next(data for kind, data in events if kind == "approval_decided")["data"]
    assert decision["by"]["tenant"] == "tenantA" and decision["verdict"] == "approved" and decision["at"] > 0
    assert 'planstack_approval_decisions_total{tenant="tenantA",verdict="approved"} 1.0' in metrics


def test_only_an_approver_key_decides_and_the_decision_names_the_key(stack: SteeringStack) -> None:
    """The key that started the run used to be able to approve its own held call."""
    run_id = start(stack, booking_plan("Own Approval"))  # started with tenant A's application key
    stack.wait_status(run_id, "awaiting_approval")
    with stack.client() as app, stack.client(KEY_B) as bob, stack.client(KEY_A_APPROVER) as ops:
        for verb in ("approve", "reject"):
            response = app.post(f"/v1/runs/{run_id}/{verb}", json={"name": "the app itself"})
            check_error_shape(response)
            assert response.status_code == 403, response.text
            error = response.json()["error"]
            assert error["code"] == "approver_key_required" and "approver" in error["message"]
        assert bob.post(f"/v1/runs/{run_id}/approve", json={}).status_code == 403  # scope first: nothing learned
        assert app.get(f"/v1/runs/{run_id}").json()["status"] == "awaiting_approval"  # nothing was decided
        assert stack.calls.counts["book:Own Approval"] == 0
        decided = ops.post(f"/v1/runs/{run_id}/approve", json={"name": "Olga"})
        assert decided.status_code == 200, decided.text
        key_id = decided.json()["decision"]["by"]["key_id"]
    final = stack.wait_status(run_id, "succeeded", "failed")
    assert final["status"] == "succeeded" and stack.calls.counts["book:Own Approval"] == 1
    recorded = final["approval"]["decisions"][0]["by"]
    assert recorded == {"tenant": "tenantA", "name": "Olga", "key_id": key_id}  # which key, never the key
    assert KEY_A_APPROVER not in json.dumps(final) and key_id != KEY_A_APPROVER


def test_running_an_escalation_again_approves_its_plan_so_needs_an_approver_key(stack_factory: Any) -> None:
    """For a tenant whose every plan needs approval, resuming or re-planning an escalation consents to the
    plan of the new round: the application's own key gets 403 there, as on /approve."""
    stack = stack_factory(approvals={**FAST["approvals"], "plan_tenants": ["tenantA"]})
    stack.calls.fail_next("approved-payments", 1)
    run_id = start(stack, {"nodes": [{"id": "n1", "tool": "explode", "args": {"label": "approved-payments"}}]})
    stack.wait_status(run_id, "awaiting_approval")  # the plan waits for a person
    with stack.client() as app, stack.client(KEY_A_APPROVER) as ops:
        assert ops.post(f"/v1/runs/{run_id}/approve", json={"name": "Olga"}).status_code == 200
        assert stack.wait_status(run_id, "failed")["escalation"]["state"] == "open"
        edited = {"nodes": [{"id": "n1", "tool": "nap", "args": {"label": "edited", "seconds": 0.05}}]}
        for action, body in (("resume", {"name": "app"}), ("replan", {"name": "app", "plan": edited})):
            response = app.post(f"/v1/escalations/{run_id}/{action}", json=body)
            check_error_shape(response)
            assert response.status_code == 403 and response.json()["error"]["code"] == "approver_key_required"
        assert [item["run_id"] for item in app.get("/v1/escalations").json()["data"]] == [run_id]  # still open
        assert ops.post(f"/v1/escalations/{run_id}/resume", json={"name": "Olga"}).status_code == 200
    final = stack.wait_status(run_id, "succeeded", "failed")
    assert final["status"] == "succeeded" and final["escalation"]["handled_by"]["key_id"].startswith("key_")


def test_nothing_reopens_a_run_past_the_tenant_s_active_runs_cap(stack_factory: Any) -> None:
    """Approvals and escalations used to move runs back to executing past the cap checked at creation."""
    stack = stack_factory(runs={**FAST["runs"], "max_active_runs_per_tenant": 1})
    paused = start(stack, booking_plan("Capped"))
    stack.wait_status(paused, "awaiting_approval")  # paused: not executing
    stack.calls.fail_next("capped-payments", 1)
    escalated = start(stack, {"nodes": [{"id": "n1", "tool": "explode", "args": {"label": "capped-payments"}}]})
    assert stack.wait_status(escalated, "failed")["escalation"]["state"] == "open"
    busy = start(stack, {"nodes": [{"id": "n1", "tool": "hold", "args": {"label": "holds the slot"}}]})
    edited = {"nodes": [{"id": "n1", "tool": "nap", "args": {"label": "edited", "seconds": 0.05}}]}
    attempts = [
        (f"/v1/runs/{paused}/approve", {"name": "Olga"}),
        (f"/v1/runs/{paused}/reject", {"name": "Olga", "reason": "cheaper", "replan": True}),
        (f"/v1/escalations/{escalated}/resume", {"name": "Olga"}),
        (f"/v1/escalations/{escalated}/replan", {"name": "Olga", "plan": edited}),
    ]
    with stack.client(KEY_A_APPROVER) as ops:
        for path, body in attempts:
            response = ops.post(path, json=body)
            check_error_shape(response)
            assert response.status_code == 429, (path, response.text)
            assert response.json()["error"]["code"] == "too_many_active_runs" and response.headers["Retry-After"]
        waiting = ops.get(f"/v1/runs/{paused}").json()  # each run stays as it was
        assert waiting["status"] == "awaiting_approval" and waiting["approval"]["decisions"] == []
        assert [item["run_id"] for item in ops.get("/v1/escalations").json()["data"]] == [escalated]
        assert stack.calls.counts["book:Capped"] == 0 and stack.calls.counts["edited"] == 0
        stack.calls.released.set()  # the executing run ends: its slot is free
        assert stack.wait_status(busy, "succeeded")["status"] == "succeeded"
        assert ops.post(f"/v1/runs/{paused}/approve", json={"name": "Olga"}).status_code == 200
        assert stack.wait_status(paused, "succeeded", "failed")["status"] == "succeeded"
        assert ops.post(f"/v1/escalations/{escalated}/resume", json={"name": "Olga"}).status_code == 200
        assert stack.wait_status(escalated, "succeeded", "failed")["status"] == "succeeded"


def test_a_rejected_call_never_runs(stack: SteeringStack) -> None:
    run_id = start(stack, booking_plan("Grand Palace"))
    stack.wait_status(run_id, "awaiting_approval")
    with stack.client(KEY_A_APPROVER) as client:
        response = client.post(f"/v1/runs/{run_id}/reject", json={"name": "Alice", "reason": "over budget"})
        assert response.status_code == 200, response.text
    final = stack.wait_status(run_id, "failed", "succeeded")
    assert final["status"] == "failed" and final["error"]["type"] == "approval_rejected"
    assert "over budget" in final["error"]["error"] and final["escalation"] is None
    assert stack.calls.counts["book:Grand Palace"] == 0 and stack.calls.counts["booked Grand Palace"] == 0


def test_an_escalated_run_is_queued_and_resumes(stack: SteeringStack) -> None:
    stack.calls.fail_next("payments", 1)  # fails the first time only
    plan = {"nodes": [
        {"id": "n1", "tool": "nap", "args": {"label": "quote", "seconds": 0.05}},
        {"id": "n2", "tool": "explode", "args": {"label": "payments"}, "depends_on": ["n1"]},
    ]}  # fmt: skip
    run_id = start(stack, plan)
    failed = stack.wait_status(run_id, "failed")
    assert failed["escalation"]["state"] == "open" and failed["escalation"]["reason"] == "replans_exhausted"
    with stack.client() as client, stack.client(KEY_B) as bob:
        queue = client.get("/v1/escalations").json()
        assert [item["run_id"] for item in queue["data"]] == [run_id]
        assert queue["data"][0]["error"]["type"] == "replans_exhausted"
        assert bob.get("/v1/escalations").json()["data"] == []
        assert bob.post(f"/v1/escalations/{run_id}/resume", json={"name": "b"}).status_code == 404
        listed = client.get("/v1/runs", params={"status": "escalated"}).json()["data"]
        assert [run["run_id"] for run in listed] == [run_id]
        resumed = client.post(f"/v1/escalations/{run_id}/resume", json={"name": "Alice"})
        assert resumed.status_code == 200, resumed.text
        final = stack.wait_status(run_id, "succeeded", "failed")
        assert final["status"] == "succeeded" and final["round"] == 1, final["error"]
        assert final["escalation"]["state"] == "resumed" and final["escalation"]["handled_by"]["name"] == "Alice"
        assert stack.calls.counts["quote"] == 1 and stack.calls.counts["payments"] == 2  # n1 reused
        assert client.get("/v1/escalations").json()["data"] == []
        closed = client.post(f"/v1/escalations/{run_id}/close", json={"note": "late"})
        assert closed.status_code == 409 and closed.json()["error"]["code"] == "not_escalated"
        bad = client.post(
            f"/v1/escalations/{run_id}/replan", json={"plan": {"nodes": [{"id": "n1", "tool": "rocket"}]}}
        )
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "plan"  # validated like a client plan


class Receiver:
    """A webhook receiver on loopback: answers 500 to the first delivery of each event, then 200."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.app = FastAPI()

        @self.app.post("/moved")
        async def moved(request: Request) -> Response:
            with self.lock:
                self.received.append((dict(request.headers), await request.body()))
            return Response(status_code=307, headers={"Location": "/hook"})

        @self.app.post("/hook")
        async def hook(request: Request) -> Response:
            body = await request.body()
            with self.lock:
                self.received.append((dict(request.headers), body))
                first = (
                    sum(
                        1
                        for h, _ in self.received
                        if h["x-planstack-delivery"] == request.headers["x-planstack-delivery"]
                    )
                    == 1
                )
            return Response(status_code=500 if first else 204)


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, str]]:
    hook = Receiver()
    server = ServerThread(hook.app).start()
    try:
        yield hook, f"{server.url}/hook"
    finally:
        server.stop()


def loopback_hooks(url: str, **extra: Any) -> dict[str, Any]:
    """FAST's webhook settings opened to the loopback receiver at `url` (its port, a private address)."""
    port = int(url.split(":")[2].split("/")[0])
    return {**FAST["webhooks"], "allowed_ports": [port], "allow_private_addresses": True, **extra}


def test_a_webhook_receiver_gets_signed_retried_events(stack_factory: Any, receiver: tuple[Receiver, str]) -> None:
    hook, url = receiver
    stack = stack_factory(webhooks=loopback_hooks(url))
    with stack.client() as client, stack.client(KEY_B) as bob:
        key = bytes.fromhex(client.get("/v1/webhooks/signing-key").json()["key"])
        assert key != bytes.fromhex(bob.get("/v1/webhooks/signing-key").json()["key"])  # each tenant its own
        for refused in ("http://example.org/hook", "ftp://127.0.0.1/x", "http://user:pw@127.0.0.1/hook"):
            response = client.post("/v1/runs", json={"request": "x", "plan": booking_plan(), "webhook_url": refused})
            assert response.status_code == 400 and response.json()["error"]["param"] == "webhook_url", refused
    run_id = start(stack, booking_plan("Lakeside"), webhook_url=url)
    stack.wait_status(run_id, "awaiting_approval")
    with stack.client(KEY_A_APPROVER) as client:
        client.post(f"/v1/runs/{run_id}/approve", json={"name": "Alice"})
    stack.wait_status(run_id, "succeeded")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        view = stack.wait_status(run_id, "succeeded")
        if [d["state"] for d in view["deliveries"]] == ["delivered", "delivered"]:
            break
        time.sleep(0.1)
    assert [(d["event"], d["state"], d["attempts"]) for d in view["deliveries"]] == [
        ("awaiting_approval", "delivered", 2),
        ("run_finished", "delivered", 2),
    ]
    with hook.lock:
        received = list(hook.received)
    assert len(received) == 4  # each event: a 500, then a retry that was accepted
    for headers, body in received:
        expected = hmac.new(key, headers["x-planstack-timestamp"].encode() + b"." + body, hashlib.sha256)
        assert headers["x-planstack-signature"] == "sha256=" + expected.hexdigest()
        payload = json.loads(body)
        assert payload["run_id"] == run_id and payload["tenant"] == "tenantA"
        assert headers["x-planstack-delivery"] == f"{run_id}:{payload['seq']}"
    # Events go out independently (a retry of an earlier event may arrive after a later event's first
    # attempt): per delivery id two attempts, and `seq` orders the events of the run.
    attempts: dict[str, list[str]] = {}
    for headers, body in received:
        attempts.setdefault(headers["x-planstack-delivery"], []).append(json.loads(body)["type"])
    by_seq = sorted(attempts.items(), key=lambda item: int(item[0].rsplit(":", 1)[1]))
    assert [types for _, types in by_seq] == [["awaiting_approval"] * 2, ["run_finished"] * 2]
    assert stack.calls.counts["book:Lakeside"] == 1


def test_redirects_are_not_followed_and_deliveries_give_up(stack_factory: Any, receiver: tuple[Receiver, str]) -> None:
    hook, url = receiver
    hooks = loopback_hooks(url, max_attempts=2, backoff_base_s=0.01, events=["run_finished"])
    stack = stack_factory(webhooks=hooks)
    plan = {"nodes": [{"id": "n1", "tool": "nap", "args": {"label": "x", "seconds": 0.01}}]}
    run_id = start(stack, plan, webhook_url=url.replace("/hook", "/moved"))
    deadline = time.monotonic() + 20
    view = stack.wait_status(run_id, "succeeded")
    while time.monotonic() < deadline and [d["state"] for d in view["deliveries"]] != ["failed"]:
        time.sleep(0.05)
        view = stack.wait_status(run_id, "succeeded")
    assert [(d["state"], d["attempts"], d["status_code"]) for d in view["deliveries"]] == [("failed", 2, 307)]
    with hook.lock:
        paths = [headers.get("x-planstack-event") for headers, _ in hook.received]
    assert paths == ["run_finished", "run_finished"]  # both to /moved: the redirect to /hook was not followed
    assert view["status"] == "succeeded"  # the run never waited for its webhook


def test_the_run_list_pages_newest_first_and_filters(stack: SteeringStack) -> None:
    plan = {"nodes": [{"id": "n1", "tool": "nap", "args": {"label": "one", "seconds": 0.01}}]}
    with stack.client() as client:
        ids = [
            client.post("/v1/runs", json={"request": f"r{i}", "plan": plan, "wait": True}).json()["run_id"]
            for i in range(3)
        ]
        first = client.get("/v1/runs", params={"limit": 2}).json()
        second = client.get("/v1/runs", params={"limit": 2, "after": first["next_after"]}).json()
        assert [r["run_id"] for r in first["data"] + second["data"]] == ids[::-1] and second["next_after"] is None
        assert [r["status"] for r in first["data"]] == ["succeeded", "succeeded"]
        assert client.get("/v1/runs", params={"status": "failed"}).json()["data"] == []
        assert client.get("/v1/runs", params={"status": "bogus"}).status_code == 400
        assert client.get("/v1/runs", params={"after": "../etc"}).status_code == 400
        plans = client.get(f"/v1/runs/{ids[0]}/plans").json()["data"]
        assert [p["round"] for p in plans] == [0] and plans[0]["plan"]["nodes"][0]["tool"] == "nap"


def test_the_ui_is_served_with_a_strict_content_security_policy(stack: SteeringStack) -> None:
    with stack.client() as client:
        modules = sorted(path.name for path in STATIC.glob("*.js"))
        assert "app.js" in modules and len(modules) > 5  # the UI is ES modules, one per page or concern
        for path in ("/ui/", "/ui/app.css", *(f"/ui/{name}" for name in modules)):
            response = client.get(path, headers={"Authorization": ""})  # the page itself needs no key
            assert response.status_code == 200, path
            csp = response.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
            assert response.headers["x-content-type-options"] == "nosniff"
            if path.endswith(".js"):
                assert response.headers["content-type"].startswith("text/javascript")  # module scripts need it
        index = client.get("/ui/").text
        assert '<script type="module" src="app.js"></script>' in index and "<script>" not in index
        assert "http" not in index
        assert client.get("/ui/../serving/app.py").status_code == 404
        assert client.get("/ui/secret.txt").status_code == 404
        assert client.get("/ui", follow_redirects=False).headers["location"] == "/ui/"

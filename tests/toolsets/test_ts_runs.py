"""Runs over toolsets through the real gateway, against the REAL example services on loopback.

MCP (the example inventory server): a lookup feeding a call by reference, structured output, `isError`
as a non-retried failure with the server's words as data, a slow tool hitting its timeout, the server
killed and restarted mid-run (the read-only call is retried on a new session), a destructiveHint tool
pausing the run for approval, and `tools/list_changed` (a new tool appears in the toolset and runs).
OpenAPI (the example billing service): a lookup GET feeding a POST, exactly one creation per node
across a retry (the service commits, its answer is lost, the retry replays with the same
Idempotency-Key), the credential sent as the service's Authorization header, a redirect refused. A
run records the definitions it used; plans and the planner model see a toolset's tools."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import KEY_A_APPROVER
from tests.sources.conftest import ServiceProcess
from tests.sources.odd_service import OddService
from tests.toolsets.conftest import ToolsetGateway, billing_document, billing_stats, register

pytestmark = [pytest.mark.fake_upstream, pytest.mark.slow]
TOKEN = "sk-billing-7a7a7a7a7a7a7a7a"


def start(client: httpx.Client, toolsets: list[str], *nodes: dict[str, Any], request: str = "run") -> str:
    created = client.post("/v1/runs", json={"request": request, "toolsets": toolsets, "plan": {"nodes": list(nodes)}})
    assert created.status_code == 202, created.text
    return str(created.json()["run_id"])


def node(view: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(r for r in view["nodes"] if r["node_id"] == node_id and r["round"] == view["round"])


def mcp(client: httpx.Client, server: ServiceProcess, name: str = "inventory", **extra: Any) -> dict[str, Any]:
    return register(client, {"name": name, "kind": "mcp", "url": f"{server.url}/mcp", **extra})


def test_an_mcp_lookup_feeds_a_call_and_errors_stay_data(gateway: ToolsetGateway, mcp_server: ServiceProcess) -> None:
    with gateway.client() as client:
        toolset = mcp(client, mcp_server)
        run_id = start(
            client,
            ["inventory"],
            {"id": "n1", "tool": "find_products", "args": {"name": "bolt"}},
            {"id": "n2", "tool": "get_stock", "args": {"product_id": "$n1.products.0.product_id"}},
            {"id": "n3", "tool": "get_stock", "args": {"product_id": "prd_404"}},
        )
        view = gateway.wait_status(run_id, "succeeded", "failed")
        assert node(view, "n2")["output"]["quantity"] == 1200 and node(view, "n2")["args"] == {"product_id": "prd_1001"}
        failed = node(view, "n3")
        assert failed["status"] == "failed" and failed["attempts"] == 1  # isError: not retried
        assert failed["error"]["type"] == "remote_error" and "prd_404" in failed["error"]["data"]["message"]
        recorded = view["tools"]["toolsets"][0]
        assert recorded["toolset_id"] == toolset["id"] and recorded["version"] == toolset["version"]
        assert {t["name"] for t in recorded["tools"]} >= {"find_products", "get_stock"}


def test_a_slow_tool_times_out_and_a_destructive_one_waits_for_approval(
    gateway: ToolsetGateway, service_factory: Callable[..., ServiceProcess]
) -> None:
    server = service_factory("examples.mcp_server")
    with gateway.client() as client:
        mcp(client, server, timeout_s=0.5)
        slow = start(client, ["inventory"], {"id": "n1", "tool": "stock_report", "args": {"seconds": 20}})
        view = gateway.wait_status(slow, "succeeded", "failed")
        assert node(view, "n1")["error"]["type"] == "timeout" and node(view, "n1")["attempts"] == 3  # read-only: retried
        run_id = start(
            client,
            ["inventory"],
            {"id": "n1", "tool": "discontinue_product", "args": {"product_id": "prd_1003"}},
            {"id": "n2", "tool": "get_stock", "args": {"product_id": "prd_1003"}, "depends_on": ["n1"]},
        )
        paused = gateway.wait_status(run_id, "awaiting_approval")
        assert paused["approval"]["pending"]["calls"][0]["tool"] == "discontinue_product"
        with gateway.client(KEY_A_APPROVER) as approver:  # only an approver key decides
            assert approver.post(f"/v1/runs/{run_id}/approve", json={"name": "ops"}).status_code == 200
        done = gateway.wait_status(run_id, "succeeded", "failed")
        assert done["status"] == "succeeded" and node(done, "n2")["output"]["discontinued"] is True


def test_tools_list_changed_adds_a_tool_to_the_toolset(
    gateway: ToolsetGateway, service_factory: Callable[..., ServiceProcess]
) -> None:
    server = service_factory("examples.mcp_server")
    with gateway.client() as client:
        toolset = mcp(client, server)
        run_id = start(client, ["inventory"], {"id": "n1", "tool": "enable_reorders", "args": {}})
        assert gateway.wait_status(run_id, "succeeded", "failed")["status"] == "succeeded"
        deadline = time.monotonic() + 30
        while True:  # the gateway's session heard notifications/tools/list_changed and stored the new list
            current = client.get("/v1/toolsets/inventory").json()
            if current["revision"] == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert current["revision"] == 2 and current["version"] != toolset["version"]
        assert "reorder_product" in {t["name"] for t in current["tools"]}
        again = start(client, ["inventory"], {"id": "n1", "tool": "reorder_product", "args": {"product_id": "prd_1001", "quantity": 5}})
        view = gateway.wait_status(again, "succeeded", "failed")
        assert view["status"] == "succeeded" and node(view, "n1")["output"]["order_id"] == "ord_1"
        assert view["tools"]["toolsets"][0]["revision"] == 2


def test_the_mcp_server_killed_and_restarted_mid_run(
    gateway_factory: Callable[..., ToolsetGateway], service_factory: Callable[..., ServiceProcess]
) -> None:
    server = service_factory("examples.mcp_server")
    patient = gateway_factory(executors={"default_max_attempts": 10, "backoff_base_s": 0.5, "backoff_max_s": 5.0})
    with patient.client() as client:
        mcp(client, server)
        run_id = start(client, ["inventory"], {"id": "n1", "tool": "stock_report", "args": {"seconds": 3}})
        time.sleep(1.0)  # the call is in flight on the server (it takes 3 s)
        server.kill()
        server.start()  # same port: a restarted server
        view = patient.wait_status(run_id, "succeeded", "failed", timeout_s=120)
        assert view["status"] == "succeeded", view["error"]
        assert node(view, "n1")["attempts"] >= 2 and node(view, "n1")["output"] == {"products": 3, "units": 4675}


def test_an_openapi_lookup_feeds_a_post_created_exactly_once_across_a_retry(
    gateway: ToolsetGateway, billing_plus: ServiceProcess
) -> None:
    with gateway.client() as client:
        register(
            client,
            {
                "name": "billing",
                "kind": "openapi",
                "document": billing_document(billing_plus),
                "base_url": billing_plus.url,
                "auth": {"kind": "bearer", "secret": TOKEN},
            },
        )
        before = billing_stats(billing_plus)
        httpx.post(f"{billing_plus.url}/_faults", json={"fail_after_create": 1}, timeout=10)
        run_id = start(
            client,
            ["billing"],
            {"id": "n1", "tool": "searchCustomers", "args": {"name": "globex"}},
            {"id": "n2", "tool": "createInvoice", "args": {"customerId": "$n1.customers.0.id", "amountCents": 4200, "currency": "EUR"}},
        )
        view = gateway.wait_status(run_id, "succeeded", "failed")
        assert view["status"] == "succeeded", view["error"]
        created = node(view, "n2")
        assert created["attempts"] == 2 and created["output"]["customerId"] == "cus_101"
        after = billing_stats(billing_plus)
        assert after["invoicesCreated"] == before["invoicesCreated"] + 1  # one creation for the node
        assert after["idempotentReplays"] == before["idempotentReplays"] + 1  # the retry replayed it
        seen = httpx.get(f"{billing_plus.url}/_seen", timeout=10).json()["authorization_sha256"]
        assert hashlib.sha256(f"Bearer {TOKEN}".encode()).hexdigest() in seen
        assert TOKEN not in str(view)


def test_a_redirect_at_call_time_is_refused(gateway: ToolsetGateway, odd_service: OddService) -> None:
    document = {
        "openapi": "3.1.0",
        "info": {"title": "odd", "version": "1"},
        "paths": {"/redirect": {"get": {"operationId": "goElsewhere", "responses": {"200": {"description": "ok"}}}}},
    }
    with gateway.client() as client:
        register(client, {"name": "odd", "kind": "openapi", "document": document, "base_url": odd_service.url})
        run_id = start(client, ["odd"], {"id": "n1", "tool": "goElsewhere", "args": {}})
        view = gateway.wait_status(run_id, "succeeded", "failed")
        assert node(view, "n1")["error"]["type"] == "redirect_refused"
        assert odd_service.hits["redirect"] == 1 and odd_service.hits["echo"] == 0


def test_plans_and_the_planner_model_plan_over_a_toolset(gateway: ToolsetGateway, mcp_server: ServiceProcess) -> None:
    with gateway.client() as client:
        mcp(client, mcp_server)
        planned = client.post("/v1/plans", json={"request": "How many steel bolts are in stock?", "toolsets": ["inventory", "llm"]})
        assert planned.status_code in (200, 422), planned.text
        prompts = " ".join(str(body.get("messages")) for body in gateway.behaviour.received)
        assert "find_products" in prompts or "get_stock" in prompts  # the toolset's tools reached the planner
        chat = client.post(
            "/v1/chat/completions",
            json={"model": "planner", "messages": [{"role": "user", "content": "stock of bolts"}], "toolsets": ["inventory"]},
        )
        assert chat.status_code in (200, 422), chat.text
        relayed = client.post(
            "/v1/chat/completions",
            json={"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "toolsets": ["inventory"]},
        )
        assert relayed.status_code == 400 and relayed.json()["error"]["param"] == "toolsets"
        unknown = client.post("/v1/plans", json={"request": "x", "toolsets": ["nope"]})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "toolset_not_found"
        invalid = client.post(
            "/v1/runs",
            json={"request": "x", "toolsets": ["inventory"], "plan": {"nodes": [{"id": "n1", "tool": "search_flights", "args": {}}]}},
        )
        assert invalid.status_code == 400 and invalid.json()["error"]["param"] == "plan"  # not in this run's catalog


def test_a_toolset_deleted_while_a_run_waits_fails_its_calls(gateway: ToolsetGateway, mcp_server: ServiceProcess) -> None:
    with gateway.client() as client:
        mcp(client, mcp_server)
        run_id = start(client, ["inventory"], {"id": "n1", "tool": "discontinue_product", "args": {"product_id": "prd_1002"}})
        gateway.wait_status(run_id, "awaiting_approval")
        assert client.delete("/v1/toolsets/inventory").status_code == 200
        with gateway.client(KEY_A_APPROVER) as approver:  # only an approver key decides
            assert approver.post(f"/v1/runs/{run_id}/approve", json={"name": "ops"}).status_code == 200
        view = gateway.wait_status(run_id, "succeeded", "failed")
        assert node(view, "n1")["error"]["type"] == "source_error"  # the recorded tool, no source any more
        stock = start(client, ["builtin"], {"id": "n1", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}})
        assert gateway.wait_status(stock, "succeeded", "failed")["status"] == "succeeded"


def test_an_escalated_run_is_replanned_over_its_own_tools(gateway: ToolsetGateway, mcp_server: ServiceProcess) -> None:
    with gateway.client() as client:
        mcp(client, mcp_server)
        run_id = start(client, ["inventory"], {"id": "n1", "tool": "get_stock", "args": {"product_id": "prd_404"}})
        failed = gateway.wait_status(run_id, "failed", "succeeded")
        assert failed["status"] == "failed" and failed["escalation"]["state"] == "open", failed
        foreign = {"nodes": [{"id": "n1", "tool": "search_flights", "args": {}}]}  # built-in: not this run's
        refused = client.post(f"/v1/escalations/{run_id}/replan", json={"plan": foreign})
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "plan"
        edited = {"nodes": [{"id": "n1", "tool": "get_stock", "args": {"product_id": "prd_1001"}}]}
        replanned = client.post(f"/v1/escalations/{run_id}/replan", json={"plan": edited, "name": "ops"})
        assert replanned.status_code == 200, replanned.text
        final = gateway.wait_status(run_id, "succeeded", "failed")
        assert final["status"] == "succeeded" and node(final, "n1")["output"]["quantity"] == 1200, final

"""Per-tool operations in /metrics: calls by source, tool and outcome, latency, retries, breaker state, runs
finished and re-planned, runs waiting; with the labels of the tenants' tools bounded."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from serving.metrics import BoundedLabels
from tests.sources.conftest import ServiceProcess
from tests.toolsets.conftest import ToolsetGateway, register


def samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def test_labels_are_bounded_per_source_and_in_sources() -> None:
    labels = BoundedLabels(max_sources=2, max_tools_per_source=2)
    assert labels("builtin", "a") == ("builtin", "a")
    assert labels("builtin", "b") == ("builtin", "b")
    assert labels("builtin", "c") == ("builtin", "other")  # a third tool of the source
    assert labels("builtin", "a") == ("builtin", "a")  # known ones keep their name
    assert labels("inventory", "x") == ("inventory", "x")
    assert labels("crm", "y") == ("other", "other")  # a third source


@pytest.mark.fake_upstream
@pytest.mark.slow
def test_tool_calls_outcomes_retries_and_breakers_are_series(
    gateway_factory: Callable[..., ToolsetGateway], service_factory: Callable[..., ServiceProcess]
) -> None:
    server = service_factory("examples.mcp_server")
    token = "metrics-token-0123"  # behind the token the series name the tenant's own toolsets and tools
    gateway = gateway_factory(
        executors={"breaker_threshold": 2, "default_max_attempts": 2}, gateway={"metrics_token": token}
    )
    with gateway.client() as client:
        register(client, {"name": "inventory", "kind": "mcp", "url": f"{server.url}/mcp", "timeout_s": 0.3})
        plan = {"nodes": [
            {"id": "n1", "tool": "get_stock", "args": {"product_id": "prd_1001"}},
            {"id": "n2", "tool": "get_stock", "args": {"product_id": "prd_404"}},
            {"id": "n3", "tool": "stock_report", "args": {"seconds": 5}},
        ]}  # fmt: skip
        created = client.post("/v1/runs", json={"request": "stock", "toolsets": ["inventory"], "plan": plan})
        assert gateway.wait_status(created.json()["run_id"], "succeeded", "failed")["status"] == "failed"
        text = client.get("/metrics", headers={"Authorization": f"Bearer {token}"}).text
    calls = samples(text, "planstack_tool_calls_total")
    key = lambda tool, outcome: (("outcome", outcome), ("source", "inventory"), ("tool", tool))  # noqa: E731
    assert calls[key("get_stock", "ok")] == 1 and calls[key("get_stock", "remote_error")] == 1
    assert calls[key("stock_report", "timeout")] == 2  # read-only: retried once, both attempts timed out
    assert samples(text, "planstack_tool_retries_total")[(("source", "inventory"), ("tool", "stock_report"))] == 1
    breaker = samples(text, "planstack_tool_breaker_state")
    assert breaker[(("source", "inventory"), ("tool", "stock_report"))] == 1  # two timeouts opened it
    counted = samples(text, "planstack_tool_call_seconds_count")
    assert counted[(("source", "inventory"), ("tool", "get_stock"))] == 2
    assert samples(text, "planstack_runs_finished_total")[(("status", "failed"),)] == 1


@pytest.mark.fake_upstream
def test_an_open_metrics_page_shows_no_name_a_tenant_chose(
    gateway: ToolsetGateway, service_factory: Callable[..., ServiceProcess]
) -> None:
    """Without `gateway.metrics_token` /metrics is open: a toolset's name and its tools' are tenant data."""
    server = service_factory("examples.mcp_server")
    with gateway.client() as client:
        register(client, {"name": "inventory", "kind": "mcp", "url": f"{server.url}/mcp"})
        plan = {"nodes": [{"id": "n1", "tool": "get_stock", "args": {"product_id": "prd_1001"}}]}
        created = client.post("/v1/runs", json={"request": "stock", "toolsets": ["inventory"], "plan": plan})
        assert gateway.wait_status(created.json()["run_id"], "succeeded", "failed")["status"] == "succeeded"
        text = client.get("/metrics").text
    calls = samples(text, "planstack_tool_calls_total")
    assert calls[(("outcome", "ok"), ("source", "toolset"), ("tool", "other"))] == 1
    assert "inventory" not in text and "get_stock" not in text


@pytest.mark.fake_upstream
def test_runs_waiting_are_counted_from_the_store(gateway: ToolsetGateway) -> None:
    plan = {"nodes": [{"id": "n1", "tool": "ask_user", "args": {"question": "Which day?"}}]}
    with gateway.client() as client:
        created = client.post("/v1/runs", json={"request": "day", "toolsets": ["ask_user"], "plan": plan})
        gateway.wait_status(created.json()["run_id"], "requires_action")
        deadline = time.monotonic() + 30
        while True:  # the upkeep sweep reads the count from the store (approvals.expiry_sweep_s: 0.2 s here)
            waiting = samples(client.get("/metrics").text, "planstack_runs_waiting")
            if waiting.get((("reason", "requires_action"),)) == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert waiting[(("reason", "requires_action"),)] == 1 and waiting[(("reason", "awaiting_approval"),)] == 0

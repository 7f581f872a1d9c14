"""MCP servers as a tool source, against the REAL example server (`python -m examples.mcp_server`,
official SDK, streamable HTTP) started by the test session on loopback, in both protocol eras where
behaviour differs ("auto" negotiates 2026-07-28, "legacy" forces the initialize handshake)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent

from contract.plan import Plan
from executors.approvals import CallGate
from executors.errors import ToolArgumentError, ToolOutputError, ToolTimeoutError
from executors.observation import sha256_json
from executors.registry import ToolRegistry
from executors.scheduler import DagScheduler
from executors.sources.egress import EgressPolicy, StaticResolver
from executors.sources.errors import EgressRefused, RemoteToolError, RemoteUnavailable
from executors.sources.mcp_client import McpToolSource, output_of
from executors.sources.mcp_sessions import HttpEndpoint, StdioEndpoint
from executors.sources.remote_spec import registry_with, remote_tool_spec, source_specs
from executors.sources.tool_source import CallContext, PolicyOverrides, RemoteTool, ToolSnapshot
from serving.toolcalls.validation import argument_validator
from tests.sources.conftest import ROOT, ServiceProcess

T = TypeVar("T")
NO_RUN = CallContext()


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def source_for(server: ServiceProcess, policy: EgressPolicy, **options: Any) -> McpToolSource:
    return McpToolSource("inventory", HttpEndpoint(f"{server.url}/mcp", policy), **options)


def with_source(
    server: ServiceProcess, policy: EgressPolicy, body: Callable[[McpToolSource], Coroutine[Any, Any, T]], **options: Any
) -> T:
    async def go() -> T:
        source = source_for(server, policy, **options)
        try:
            return await body(source)
        finally:
            await source.aclose()

    return run(go())


def test_tools_are_listed_with_their_schemas_annotations_and_policies(
    mcp_server: ServiceProcess, loopback_policy: EgressPolicy
) -> None:
    async def listed(source: McpToolSource) -> ToolSnapshot:
        return await source.refresh()

    snapshot = with_source(mcp_server, loopback_policy, listed)
    by_name = {tool.name: tool for tool in snapshot.tools}
    assert set(by_name) == {"find_products", "get_stock", "discontinue_product", "stock_report", "enable_reorders"}
    find = by_name["find_products"]
    assert find.parameters["required"] == ["name"] and find.parameters["properties"]["name"]["maxLength"] == 100
    assert "products" in (find.output_schema or {})["properties"]
    assert find.annotations == {"readOnlyHint": True}
    assert find.openai_tool()["function"]["output_schema"] == find.output_schema
    policies = {name: (tool.policy.approval, tool.policy.retryable) for name, tool in by_name.items()}
    assert policies == {
        "find_products": ("none", True),  # readOnlyHint
        "get_stock": ("none", True),
        "discontinue_product": ("required", False),  # destructiveHint: a person approves each call
        "stock_report": ("none", True),
        "enable_reorders": ("none", True),  # idempotentHint
    }
    overridden = with_source(
        mcp_server, loopback_policy, listed, overrides=PolicyOverrides(approval="required", tools={"discontinue_product": "none"})
    )
    assert {t.name: t.policy.approval for t in overridden.tools}["discontinue_product"] == "none"
    assert {t.name: t.policy.approval for t in overridden.tools}["find_products"] == "required"
    assert overridden.version != snapshot.version


def test_calls_return_structured_output_and_is_error_is_not_retried(
    mcp_server: ServiceProcess, loopback_policy: EgressPolicy
) -> None:
    async def calls(source: McpToolSource) -> tuple[Any, RemoteToolError]:
        snapshot = await source.refresh()
        found = await source.call(snapshot.get("find_products"), {"name": "hinge"}, NO_RUN)
        with pytest.raises(RemoteToolError) as failed:
            await source.call(snapshot.get("get_stock"), {"product_id": "prd_404"}, NO_RUN)
        return found, failed.value

    found, failed = with_source(mcp_server, loopback_policy, calls)
    assert found == {"products": [{"product_id": "prd_1003", "name": "Brass hinge", "unit_price_cents": 480}]}
    assert failed.retryable is False and failed.type == "remote_error"
    assert "prd_404" in failed.data["message"] and "prd_404" not in failed.message  # the server's words are data


def test_text_content_and_errors_without_structured_output() -> None:
    tool = RemoteTool(name="t", remote_name="t", description="d", parameters={"type": "object"})
    text = CallToolResult(content=[TextContent(text="line one"), ImageContent(data="", mime_type="image/png"),
                                   TextContent(text="line two")])
    assert output_of(tool, text) == {"text": "line one\nline two"}
    with pytest.raises(RemoteToolError) as failed:
        output_of(tool, CallToolResult(content=[TextContent(text="x" * 5000)], is_error=True))
    assert len(failed.value.data["message"]) < 2100


def test_a_slow_tool_hits_its_timeout_and_the_session_survives(
    mcp_server: ServiceProcess, loopback_policy: EgressPolicy
) -> None:
    async def slow(source: McpToolSource) -> tuple[ToolTimeoutError, Any]:
        snapshot = await source.refresh()
        report = snapshot.get("stock_report")
        short = report.model_copy(update={"policy": report.policy.model_copy(update={"timeout_s": 0.5})})
        with pytest.raises(ToolTimeoutError) as timed_out:
            await source.call(short, {"seconds": 20}, NO_RUN)
        after = await source.call(snapshot.get("get_stock"), {"product_id": "prd_1001"}, NO_RUN)
        assert source.pool.connects == 1
        return timed_out.value, after

    timed_out, after = with_source(mcp_server, loopback_policy, slow)
    assert timed_out.retryable is True  # a read-only tool: another attempt is harmless
    assert after["quantity"] == 1200


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_session_reconnects_after_the_server_restarts(
    service_factory: Callable[..., ServiceProcess], loopback_policy: EgressPolicy, mode: str
) -> None:
    server = service_factory("examples.mcp_server")

    async def restarts(source: McpToolSource) -> None:
        snapshot = await source.refresh()
        stock = snapshot.get("get_stock")
        assert (await source.call(stock, {"product_id": "prd_1002"}, NO_RUN))["quantity"] == 3400
        server.kill()
        await asyncio.to_thread(server.start)  # same port, a new process that knows no session
        assert (await source.call(stock, {"product_id": "prd_1002"}, NO_RUN))["quantity"] == 3400
        server.kill()
        with pytest.raises(RemoteUnavailable) as down:
            await source.call(stock, {"product_id": "prd_1002"}, NO_RUN)
        assert down.value.retryable is True  # get_stock is read-only
        await asyncio.to_thread(server.start)
        assert (await source.call(stock, {"product_id": "prd_1001"}, NO_RUN))["quantity"] == 1200

    with_source(server, loopback_policy, restarts, mode=mode)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_tools_list_changed_refreshes_the_snapshot(
    service_factory: Callable[..., ServiceProcess], loopback_policy: EgressPolicy, mode: str
) -> None:
    server = service_factory("examples.mcp_server")

    async def changes() -> ToolSnapshot:
        seen: asyncio.Queue[ToolSnapshot] = asyncio.Queue()

        async def on_change(snapshot: ToolSnapshot) -> None:
            await seen.put(snapshot)

        source = source_for(server, loopback_policy, mode=mode, on_tools_changed=on_change)
        try:
            first = await source.refresh()
            assert "reorder_product" not in {t.name for t in first.tools}
            await source.call(first.get("enable_reorders"), {}, NO_RUN)
            changed = await asyncio.wait_for(seen.get(), timeout=60)
            assert source.snapshot() == changed
            return changed
        finally:
            await source.aclose()

    changed = run(changes())
    reorder = changed.get("reorder_product")
    assert reorder.policy.retryable is False and reorder.parameters["required"] == ["product_id", "quantity"]


def test_the_egress_policy_applies_to_mcp_servers(mcp_server: ServiceProcess) -> None:
    port = mcp_server.port
    public_only = EgressPolicy(hosts=("*",), ports=(port,), schemes=("http",))
    with pytest.raises(EgressRefused):  # an address literal outside the operator's CIDRs: refused at once
        HttpEndpoint(f"http://127.0.0.1:{port}/mcp", public_only)
    resolver = StaticResolver({"tools.example.com": ["127.0.0.1"]})
    endpoint = HttpEndpoint(f"http://tools.example.com:{port}/mcp", public_only, resolver=resolver)

    async def listed() -> None:
        source = McpToolSource("inventory", endpoint)
        try:
            await source.refresh()
        finally:
            await source.aclose()

    with pytest.raises(EgressRefused):  # the name resolves to loopback: refused when connecting
        run(listed())


@pytest.mark.slow
def test_an_operator_configured_stdio_server() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    endpoint = StdioEndpoint(sys.executable, ["-m", "examples.mcp_server", "--stdio"], env=env, cwd=str(ROOT))

    async def go() -> Any:
        source = McpToolSource("local-inventory", endpoint, connect_timeout_s=90)
        try:
            snapshot = await source.refresh()
            return await source.call(snapshot.get("find_products"), {"name": "nut"}, NO_RUN)
        finally:
            await source.aclose()

    assert run(go())["products"][0]["product_id"] == "prd_1002"


def test_remote_tools_run_through_the_scheduler_like_local_ones(
    mcp_server: ServiceProcess, loopback_policy: EgressPolicy
) -> None:
    plan = Plan.model_validate(
        {
            "nodes": [
                {"id": "n1", "tool": "find_products", "args": {"name": "bolt"}},
                {"id": "n2", "tool": "get_stock", "args": {"product_id": "$n1.products.0.product_id"}},
                {"id": "n3", "tool": "discontinue_product", "args": {"product_id": "prd_1002"}},
            ]
        }
    )

    async def go(source: McpToolSource) -> tuple[Any, Any, Any]:
        await source.refresh()
        specs = source_specs(source, schema_check=argument_validator)
        scheduler = DagScheduler(registry_with(ToolRegistry(), specs))
        held = await scheduler.run_plan(plan, gate=CallGate(frozenset(), {}))
        approved = CallGate(frozenset(), {"n3": sha256_json({"product_id": "prd_1002"})})
        done = await scheduler.run_plan(plan, gate=approved, completed=held.results)
        return specs, held, done

    specs, held, done = with_source(mcp_server, loopback_policy, go)
    by_name = {spec.name: spec for spec in specs}
    assert by_name["discontinue_product"].approval == "required" and by_name["discontinue_product"].retries == 1
    assert by_name["get_stock"].retries is None and by_name["get_stock"].concurrency_class == "toolset:inventory"
    remote = by_name["get_stock"].remote
    assert remote is not None and by_name["get_stock"].args_schema == remote.parameters
    assert [call.node_id for call in held.held] == ["n3"]  # the destructive tool waited for a person
    assert held.results["n2"].output["quantity"] == 1200 and "n3" not in held.results
    assert done.ok and done.results["n3"].output == {"product_id": "prd_1002", "discontinued": True}
    with pytest.raises(ToolArgumentError):
        by_name["get_stock"].prepare_call({"product_id": 7})


def test_outputs_are_checked_against_the_declared_schema(
    mcp_server: ServiceProcess, loopback_policy: EgressPolicy
) -> None:
    async def go(source: McpToolSource) -> None:
        snapshot = await source.refresh()
        stock = snapshot.get("get_stock")
        stricter = {**(stock.output_schema or {}), "required": ["product_id", "reorder_level"]}
        spec = remote_tool_spec(source, stock.model_copy(update={"output_schema": stricter}), schema_check=argument_validator)
        with pytest.raises(ToolOutputError, match="reorder_level"):
            await spec.invoke({"product_id": "prd_1001"})

    with_source(mcp_server, loopback_policy, go)

"""Registering toolsets through the real gateway, against the REAL example services on loopback: an MCP
server (tools listed with their schemas, annotations and policies) and an OpenAPI service (its document
imported, each operation a tool); the credential is write-only (sealed; never in an answer, a log line
or the store file); another tenant cannot see, refresh, delete, plan with or run them; the operator's
egress policy refuses a disallowed host, a name resolving to loopback and a redirect at registration;
the bounds answer 4xx."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from executors.sources.egress import StaticResolver
from tests.conftest import KEY_B
from tests.reliability.helpers import check_error_shape
from tests.sources.conftest import ServiceProcess
from tests.sources.odd_service import OddService
from tests.toolsets.conftest import ToolsetGateway, billing_document, register

pytestmark = [pytest.mark.fake_upstream, pytest.mark.slow]
TOKEN = "sk-live-0f6e1d2c3b4a59687766554433221100"


def billing_body(service: ServiceProcess, name: str = "billing", **extra: object) -> dict[str, object]:
    body: dict[str, object] = {
        "name": name,
        "kind": "openapi",
        "document": billing_document(service),
        "base_url": service.url,
        "auth": {"kind": "bearer", "secret": TOKEN},
    }
    return body | extra


def secret_free(*texts: str) -> None:
    for text in texts:
        assert TOKEN not in text


def test_an_mcp_server_and_an_openapi_service_are_registered_listed_and_deleted(
    gateway: ToolsetGateway, mcp_server: ServiceProcess, billing_plus: ServiceProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    answers: list[str] = []
    with gateway.client() as client:
        inventory = register(client, {"name": "inventory", "kind": "mcp", "url": f"{mcp_server.url}/mcp"})
        tools = {tool["name"]: tool for tool in inventory["tools"]}
        assert set(tools) == {"find_products", "get_stock", "discontinue_product", "stock_report", "enable_reorders"}
        assert tools["discontinue_product"]["approval"] == "required"  # destructiveHint
        assert tools["find_products"]["retryable"] is True and tools["find_products"]["annotations"] == {"readOnlyHint": True}
        assert inventory["auth"] == {"kind": "none", "secret": None} and inventory["revision"] == 1

        created = client.post("/v1/toolsets", json=billing_body(billing_plus))
        answers.append(created.text)
        assert created.status_code == 201, created.text
        billing = created.json()
        assert billing["auth"] == {"kind": "bearer", "secret": "set"}
        assert {t["name"]: t["http"] for t in billing["tools"]} == {
            "searchCustomers": "GET /customers",
            "createInvoice": "POST /invoices",
            "getInvoice": "GET /invoices/{invoiceId}",
            "getStats": "GET /stats",
        }
        shown = client.get(f"/v1/toolsets/{billing['id']}")
        answers.append(shown.text)
        definitions = {t["name"]: t for t in shown.json()["tools"]}
        assert definitions["createInvoice"]["binding"]["method"] == "POST"
        assert "customerId" in definitions["createInvoice"]["parameters"]["properties"]
        listed = client.get("/v1/toolsets").json()["data"]
        answers.append(str(listed))
        assert [t["name"] for t in listed] == ["billing", "inventory", "builtin", "llm", "ask_user"]
        assert client.get("/v1/toolsets/llm").json()["tools"][0]["name"] in ("llm_extract", "llm_generate")

        refreshed = client.post("/v1/toolsets/inventory/refresh")
        assert refreshed.status_code == 200 and refreshed.json()["revision"] == 1  # nothing changed

        again = client.post("/v1/toolsets", json={"name": "inventory", "kind": "mcp", "url": f"{mcp_server.url}/mcp"})
        assert again.status_code == 409 and again.json()["error"]["code"] == "toolset_exists"
        deleted = client.delete("/v1/toolsets/inventory")
        assert deleted.status_code == 200 and deleted.json()["deleted"] is True
        gone = client.get("/v1/toolsets/inventory")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "toolset_not_found"
        check_error_shape(gone)
    secret_free(*answers, *(record.getMessage() for record in caplog.records))
    for path in gateway.tmp_path.glob("runs.sqlite3*"):  # the store and its -wal/-shm
        assert TOKEN.encode() not in path.read_bytes()


def test_another_tenant_cannot_see_use_or_learn_a_toolset(
    gateway: ToolsetGateway, billing_plus: ServiceProcess
) -> None:
    with gateway.client() as alice, gateway.client(KEY_B) as bob:
        billing = register(alice, billing_body(billing_plus))
        assert [t["name"] for t in bob.get("/v1/toolsets").json()["data"]] == ["builtin", "llm", "ask_user"]
        for method, path in [
            ("GET", f"/v1/toolsets/{billing['id']}"),
            ("GET", "/v1/toolsets/billing"),
            ("POST", f"/v1/toolsets/{billing['id']}/refresh"),
            ("DELETE", f"/v1/toolsets/{billing['id']}"),
        ]:
            answer = bob.request(method, path)
            assert answer.status_code == 404, (method, path, answer.text)
            check_error_shape(answer)
            secret_free(answer.text)
        plan = {"nodes": [{"id": "n1", "tool": "getStats", "args": {}}]}
        for path, body in [
            ("/v1/plans", {"request": "invoice stats", "toolsets": [billing["id"]]}),
            ("/v1/runs", {"request": "invoice stats", "toolsets": ["billing"], "plan": plan}),
            ("/v1/chat/completions", {"model": "planner", "messages": [{"role": "user", "content": "stats"}], "toolsets": ["billing"]}),
        ]:
            answer = bob.post(path, json=body)
            assert answer.status_code == 404 and answer.json()["error"]["code"] == "toolset_not_found", answer.text
        assert alice.get("/v1/toolsets/billing").status_code == 200  # still there for its owner


def test_the_egress_policy_refuses_at_registration(
    gateway_factory: Callable[..., ToolsetGateway], odd_service: OddService, mcp_server: ServiceProcess
) -> None:
    resolver = StaticResolver({"tools.example": ["127.0.0.1"], "public.example": ["93.184.216.34"]})
    strict = gateway_factory(
        resolver, tools={"egress": {"hosts": ["*.example"], "ports": ["1024-65535"], "schemes": ["http"]}}
    )
    port = mcp_server.port
    with strict.client() as client:
        cases = {
            "a host the policy does not list": f"http://internal.corp:{port}/mcp",
            "a name resolving to loopback": f"http://tools.example:{port}/mcp",
            "an address literal outside the CIDRs": f"http://127.0.0.1:{port}/mcp",
            "credentials in the URL": f"http://user:pw@public.example:{port}/mcp",
        }
        for case, url in cases.items():
            refused = client.post("/v1/toolsets", json={"name": "x", "kind": "mcp", "url": url})
            assert refused.status_code == 400, (case, refused.text)
            assert refused.json()["error"]["code"] == "egress_refused", case
            assert "127.0.0.1" not in refused.json()["error"]["message"] or "127.0.0.1" in url  # no DNS detail
            check_error_shape(refused)
    loopback = gateway_factory()  # loopback allowed: a redirecting MCP endpoint is refused at registration
    with loopback.client() as client:
        redirected = client.post("/v1/toolsets", json={"name": "odd", "kind": "mcp", "url": f"{odd_service.url}/redirect"})
        assert redirected.status_code == 400 and redirected.json()["error"]["code"] == "redirect_refused", redirected.text
        assert odd_service.hits["echo"] == 0  # never followed
        assert client.get("/v1/toolsets").json()["data"][0]["name"] == "builtin"  # nothing stored


def test_bounds_and_invalid_registrations_are_clear_4xx(
    gateway_factory: Callable[..., ToolsetGateway], billing_plus: ServiceProcess, mcp_server: ServiceProcess
) -> None:
    small = gateway_factory(tools={"max_toolsets_per_tenant": 1, "max_tools_per_toolset": 3, "max_document_bytes": 64_000})
    with small.client() as client:
        too_many_tools = client.post("/v1/toolsets", json=billing_body(billing_plus))
        assert too_many_tools.status_code == 400 and too_many_tools.json()["error"]["code"] == "openapi_invalid"
        bad = [
            ({"name": "Bad Name", "kind": "mcp", "url": f"{mcp_server.url}/mcp"}, 400, "name"),
            ({"name": "builtin", "kind": "mcp", "url": f"{mcp_server.url}/mcp"}, 400, "name"),
            ({"name": "ts_0123456789ab", "kind": "mcp", "url": f"{mcp_server.url}/mcp"}, 400, "name"),
            ({"name": "x", "kind": "mcp"}, 400, "url"),
            ({"name": "x", "kind": "mcp", "server": "not-configured"}, 400, "server"),
            ({"name": "x", "kind": "openapi", "base_url": billing_plus.url}, 400, "document"),
            ({"name": "x", "kind": "openapi", "document": "{}", "base_url": billing_plus.url}, 400, "document"),
            ({"name": "x", "kind": "mcp", "url": f"{mcp_server.url}/mcp", "auth": {"kind": "bearer"}}, 400, "auth.secret"),
            ({"name": "x", "kind": "mcp", "url": f"{mcp_server.url}/mcp", "auth": {"kind": "api_key_header", "header": "Host", "secret": "s"}}, 400, "auth"),
            ({"name": "x", "kind": "mcp", "url": f"{mcp_server.url}/mcp", "timeout_s": 9999}, 400, "timeout_s"),
            ({"name": "x", "kind": "mcp", "url": "x" * 3000}, 400, "url"),
        ]
        for body, status, param in bad:
            answer = client.post("/v1/toolsets", json=body)
            assert answer.status_code == status, (body, answer.text)
            assert answer.json()["error"]["param"] == param, (body, answer.text)
            check_error_shape(answer)
        big = client.post("/v1/toolsets", json={"name": "x", "kind": "openapi", "document": "x" * 70_000, "base_url": billing_plus.url})
        assert big.status_code == 413
        assert client.post("/v1/toolsets", json={"name": "inventory", "kind": "mcp", "url": f"{mcp_server.url}/mcp"}).status_code == 400  # 5 tools > 3
    roomy = gateway_factory(tools={"max_toolsets_per_tenant": 1})
    with roomy.client() as client:
        register(client, {"name": "inventory", "kind": "mcp", "url": f"{mcp_server.url}/mcp"})
        full = client.post("/v1/toolsets", json={"name": "more", "kind": "mcp", "url": f"{mcp_server.url}/mcp"})
        assert full.status_code == 409 and full.json()["error"]["code"] == "too_many_toolsets"


def test_a_stdio_server_comes_only_from_the_operator(
    gateway_factory: Callable[..., ToolsetGateway], tmp_path: Path
) -> None:
    root = Path(__file__).resolve().parents[2]
    server = {"command": "python3", "args": ["-m", "examples.mcp_server", "--stdio"], "cwd": str(root), "env": {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, "tenants": ["tenantA"]}
    import sys

    server["command"] = sys.executable
    stack = gateway_factory(tools={"stdio_servers": {"inventory": server}})
    with stack.client() as alice, stack.client(KEY_B) as bob:
        made = register(alice, {"name": "local", "kind": "mcp", "server": "inventory"})
        assert made["server"] == "inventory" and made["tool_count"] == 5
        refused = bob.post("/v1/toolsets", json={"name": "local", "kind": "mcp", "server": "inventory"})
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "server"
        command = alice.post("/v1/toolsets", json={"name": "evil", "kind": "mcp", "server": "inventory", "command": "sh"})
        assert command.status_code == 400 and command.json()["error"]["param"] == "command"  # no field for it


def test_a_client_cannot_send_httpx_requests_through_a_toolset_to_unlisted_hosts(
    gateway: ToolsetGateway,
) -> None:
    with gateway.client() as client:
        https_only = client.post("/v1/toolsets", json={"name": "x", "kind": "mcp", "url": "ftp://127.0.0.1:2121/mcp"})
        assert https_only.status_code == 400 and https_only.json()["error"]["code"] == "egress_refused"
    assert httpx.get(f"{gateway.url}/health").status_code in (200, 503)

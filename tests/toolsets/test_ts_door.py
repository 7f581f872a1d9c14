"""The toolset endpoints go through the door (serving/door) like every other route: registration bodies
are read with its bounded reader, an OpenAPI document is imported and a toolset's tools are checked in
its worker processes on the tenant's share and within `door.deadline_s`, the caller's tools of a run
and the outputs it answers are checked the same way. Real gateway, real example services on loopback;
the generic hostile-body test over every route is tests/reliability/test_rel_sec_door_all.py."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import httpx
import pytest

from tests.conftest import KEY_B
from tests.reliability.door_helpers import registration, tiny_schemas_document
from tests.reliability.helpers import check_error_shape
from tests.sources.conftest import ServiceProcess
from tests.toolsets.conftest import ToolsetGateway, billing_document

pytestmark = [pytest.mark.fake_upstream, pytest.mark.slow]
DOOR_TEST_NET = {"cidrs": ["127.0.0.0/8", "203.0.113.0/24"], "ports": ["1024-65535", 443], "schemes": ["http", "https"]}


def door_checks(client: httpx.Client) -> dict[str, float]:
    """planstack_door_checks_total by outcome, read from /metrics."""
    text = client.get("/metrics").text
    found = re.findall(r'^planstack_door_checks_total\{outcome="(\w+)"\} (\S+)$', text, re.MULTILINE)
    return {outcome: float(value) for outcome, value in found}


def test_registration_and_the_callers_tools_are_checked_by_the_door(
    gateway: ToolsetGateway, billing_plus: ServiceProcess, mcp_server: ServiceProcess
) -> None:
    with gateway.client() as client:
        before = door_checks(client).get("pool", 0.0)
        body = {"name": "billing", "kind": "openapi", "document": billing_document(billing_plus), "base_url": billing_plus.url}
        assert client.post("/v1/toolsets", json=body).status_code == 201
        after_openapi = door_checks(client).get("pool", 0.0)
        assert after_openapi >= before + 2  # the import, then the tools' definitions
        mcp = {"name": "inventory", "kind": "mcp", "url": f"{mcp_server.url}/mcp"}
        assert client.post("/v1/toolsets", json=mcp).status_code == 201
        after_mcp = door_checks(client).get("pool", 0.0)
        assert after_mcp >= after_openapi + 1  # the listed tools' definitions
        patterned = {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}
        tool = {"type": "function", "function": {"name": "lookup_code", "description": "d", "parameters": {
            "type": "object", "properties": {"code": patterned}, "required": ["code"]}}}  # fmt: skip
        plan = {"nodes": [{"id": "n1", "tool": "lookup_code", "args": {"code": "ABC-1234"}}]}
        run = client.post("/v1/runs", json={"request": "x", "tools": [tool], "plan": plan})
        assert run.status_code == 202, run.text
        assert door_checks(client).get("pool", 0.0) >= after_mcp + 1  # a pattern: checked in a worker
        bad = dict(tool, function={**tool["function"], "parameters": {"type": "object", "properties": {
            "code": {"type": "string", "pattern": "(?<=x)y"}}}})  # fmt: skip
        refused = client.post("/v1/runs", json={"request": "x", "tools": [bad], "plan": plan})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_tools", refused.text


def test_an_import_past_the_deadline_is_a_503_and_another_tenant_registers_meanwhile(
    gateway_factory: Callable[..., ToolsetGateway], billing_plus: ServiceProcess
) -> None:
    """A 1 MiB document of tiny schemas keeps the spec validator busy for about a minute: the door stops it
    at its deadline (the worker killed) while tenant B's registration has the other worker."""
    gateway = gateway_factory(door={"deadline_s": 5.0}, tools={"egress": DOOR_TEST_NET})
    hostile = registration("slow", tiny_schemas_document)
    answers: dict[str, httpx.Response] = {}

    def register_hostile() -> None:
        with gateway.client() as client:
            answers["slow"] = client.post("/v1/toolsets", content=hostile, headers={"Content-Type": "application/json"})

    with gateway.client(KEY_B) as other:
        thread = threading.Thread(target=register_hostile)
        thread.start()
        body = {"name": "billing", "kind": "openapi", "document": billing_document(billing_plus), "base_url": billing_plus.url}
        assert other.post("/v1/toolsets", json=body).status_code == 201
        thread.join(timeout=120)
    slow = answers["slow"]
    check_error_shape(slow)
    assert slow.status_code == 503 and slow.json()["error"]["code"] == "request_check_timeout", slow.text
    assert slow.headers.get("retry-after") == "1"
    with gateway.client() as client:
        names = [item["name"] for item in client.get("/v1/toolsets").json()["data"]]
        assert "slow" not in names  # nothing was stored
        body = {"name": "billing", "kind": "openapi", "document": billing_document(billing_plus), "base_url": billing_plus.url}
        assert client.post("/v1/toolsets", json=body).status_code == 201  # a fresh worker took the next import

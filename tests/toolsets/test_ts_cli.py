"""`planstack toolsets add|list|show|refresh|delete` and `planstack run --toolsets` in-process, on the configured run store, against the
REAL example MCP server and billing service: the secret comes from an environment variable (never
argv) and is never printed; what the CLI registered is what the gateway's store holds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from serving.cli import app
from tests.fakes.upstream import free_port
from tests.sources.conftest import ServiceProcess
from tests.toolsets.conftest import billing_document

pytestmark = pytest.mark.slow
EGRESS = json.dumps({"cidrs": ["127.0.0.0/8"], "ports": ["1024-65535"], "schemes": ["http"]})


def invoke(env: Mapping[str, str], *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", **env})


def test_the_toolsets_commands(tmp_path: Path, mcp_server: ServiceProcess, billing_plus: ServiceProcess) -> None:
    env = {
        "PLANSTACK_HOME": str(tmp_path / "home"),
        "PLANSTACK_SECRET": "cli-toolsets-secret-0000000000000000",
        "PLANSTACK_ENGINE__PORT": str(free_port()),
        "PLANSTACK_TOOLS__EGRESS": EGRESS,
        "BILLING_TOKEN": "sk-cli-token-abcdef0123456789",
    }
    added = invoke(env, "toolsets", "add", "inventory", "--mcp-url", f"{mcp_server.url}/mcp", "--tenant", "acme")
    assert added.exit_code == 0, added.output
    assert "inventory" in added.output and "discontinue_product" in added.output and "approval" in added.output
    document = tmp_path / "billing.json"
    document.write_text(billing_document(billing_plus))
    billing = invoke(
        env, "toolsets", "add", "billing", "--openapi", str(document), "--base-url", billing_plus.url,
        "--auth", "bearer", "--secret-env", "BILLING_TOKEN", "--tenant", "acme", "--json",
    )  # fmt: skip
    assert billing.exit_code == 0, billing.output
    shown = json.loads(billing.output)
    assert shown["auth"] == {"kind": "bearer", "secret": "set"} and shown["tool_count"] == 4
    listed = invoke(env, "toolsets", "list", "--tenant", "acme")
    assert listed.exit_code == 0 and [line.split()[0] for line in listed.output.splitlines()] == ["billing", "inventory"]
    assert invoke(env, "toolsets", "list", "--tenant", "other").output == ""  # another tenant sees none
    detail = invoke(env, "toolsets", "show", "billing", "--tenant", "acme", "--json")
    assert detail.exit_code == 0 and json.loads(detail.output)["tools"][0]["binding"]["path"]
    assert invoke(env, "toolsets", "refresh", "inventory", "--tenant", "acme").exit_code == 0
    missing = invoke(env, "toolsets", "show", "billing", "--tenant", "other")
    assert missing.exit_code == 1 and "not found" in missing.output
    no_secret = invoke(env, "toolsets", "add", "x", "--mcp-url", f"{mcp_server.url}/mcp", "--secret-env", "UNSET_VAR")
    assert no_secret.exit_code == 2 and "UNSET_VAR" in no_secret.output
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([
        {"id": "n1", "tool": "find_products", "args": {"name": "nut"}},
        {"id": "n2", "tool": "get_stock", "args": {"product_id": "$n1.products.0.product_id"}},
    ]))  # fmt: skip
    ran = invoke(env, "run", "--plan", str(plan), "--toolsets", "inventory", "--tenant", "acme", "--json")
    assert ran.exit_code == 0, ran.output
    view = json.loads(ran.output)
    assert view["status"] == "succeeded" and view["nodes"][-1]["output"]["quantity"] == 3400
    assert view["tools"]["toolsets"][0]["name"] == "inventory"
    assert invoke(env, "toolsets", "delete", "billing", "--tenant", "acme").exit_code == 0
    for result in (added, billing, listed, detail):
        assert env["BILLING_TOKEN"] not in result.output
    for path in (tmp_path / "home").glob("runs.sqlite3*"):
        assert env["BILLING_TOKEN"].encode() not in path.read_bytes()

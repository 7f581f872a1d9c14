"""`planstack demos import|export|list|delete` on the configured home, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from serving.cli import app
from tests.serving.test_demonstrations import GOLD, REQUEST, TOOLS, UNKNOWN_TOOL, lines


def _run(home: Path, *args: str) -> tuple[int, str]:
    env = {"COLUMNS": "200", "PLANSTACK_HOME": str(home), "PLANSTACK_SECRET": "demos-cli-test-secret-000000000"}
    result = CliRunner().invoke(app, ["demos", *args], env=env)
    return result.exit_code, result.output


def test_import_list_export_delete(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    good = tmp_path / "good.jsonl"
    good.write_text(lines({"request": REQUEST, "plan": GOLD}, {"request": "Weather in Lima", "plan": GOLD}))
    code, out = _run(tmp_path, "import", str(good), "--tenant", "acme", "--tools", str(tools))
    assert code == 0 and "2 added, 0 updated, 0 duplicates" in out, out

    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines({"request": "to the moon", "plan": UNKNOWN_TOOL}))
    code, out = _run(tmp_path, "import", str(bad), "--tenant", "acme", "--tools", str(tools))
    assert code == 1 and "line 1" in out and "launch_rocket" in out

    code, out = _run(tmp_path, "list", "--tenant", "acme", "--json")
    page = json.loads(out)
    assert code == 0 and page["usage"]["count"] == 2 and page["data"][0]["request"] == REQUEST
    code, out = _run(tmp_path, "list", "--tenant", "acme")
    assert code == 0 and "acme: 2/5000 demonstrations" in out and "Weather in Lima" in out
    code, out = _run(tmp_path, "list", "--tenant", "other", "--json")
    assert json.loads(out)["data"] == []

    exported = tmp_path / "export.jsonl"
    code, _ = _run(tmp_path, "export", "--tenant", "acme", "-o", str(exported))
    assert code == 0 and len(exported.read_text().splitlines()) == 2
    demo_id = page["data"][0]["id"]
    code, out = _run(tmp_path, "delete", demo_id, "--tenant", "acme")
    assert code == 0 and demo_id in out
    code, out = _run(tmp_path, "delete", demo_id, "--tenant", "acme")
    assert code == 1 and "not found" in out
    code, out = _run(tmp_path, "list", "--tenant", "../etc", "--json")
    assert code == 1 and "invalid tenant" in out
    assert (tmp_path / "indexes" / "tenants" / "acme" / "demonstrations" / "manifest.json").is_file()

"""`planstack run` prints the run's page in the web UI, and stops following a run that waits for a
person (exit code 3) instead of blocking until someone decides."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from serving.cli import app
from serving.settings import Settings
from tests.fakes.upstream import free_port

PLAN = {"nodes": [{"id": "n1", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}}]}


def test_the_ui_url_comes_from_the_settings(tmp_path: Path) -> None:
    assert Settings(home=tmp_path, gateway={"host": "127.0.0.1", "port": 9100}).ui_url == "http://127.0.0.1:9100/ui/"
    assert Settings(home=tmp_path, ui={"public_url": "https://ops.example/planstack/"}).ui_url == (
        "https://ops.example/planstack/ui/"
    )


def test_planstack_run_prints_the_run_page_and_stops_at_an_approval(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    env = {
        "COLUMNS": "200",
        "PLANSTACK_HOME": str(tmp_path / "home"),
        "PLANSTACK_SECRET": "cli-test-secret-" + "0" * 16,
        "PLANSTACK_ENGINE__PORT": str(free_port()),  # no engine: a given plan needs none
        "PLANSTACK_UI__PUBLIC_URL": "http://ops.internal:8000",
        "PLANSTACK_APPROVALS__PLAN_TENANTS": '["ops"]',
    }
    store = str(tmp_path / "runs.sqlite3")
    done = CliRunner().invoke(app, ["run", "--plan", str(plan), "--store", store, "--tenant", "dev"], env=env)
    assert done.exit_code == 0, done.output
    assert "run page: http://ops.internal:8000/ui/#/runs/run_" in done.output
    assert "✓ r0 n1 get_weather" in done.output
    paused = CliRunner().invoke(app, ["run", "--plan", str(plan), "--store", store, "--tenant", "ops"], env=env)
    assert paused.exit_code == 3, paused.output
    assert "waiting for approval (plan, round 0)" in paused.output and "awaiting_approval" in paused.output
    assert "get_weather" not in paused.output.split("waiting for approval")[0]  # nothing ran before the pause

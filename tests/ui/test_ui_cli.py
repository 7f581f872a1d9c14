"""`planstack run` prints the run's page in the web UI, and stops following a run that waits for a
person (exit code 3) instead of blocking until someone decides."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from executors.approvals import ApprovalsConfig
from executors.cli import build_app
from executors.steering import Steering
from serving.settings import Settings
from tests.ui.helpers import ToolCalls, steering_registry


def page(run_id: str) -> str:
    return f"http://ops.internal:8000/ui/#/runs/{run_id}"


def test_the_ui_url_comes_from_the_settings(tmp_path: Path) -> None:
    assert Settings(home=tmp_path, gateway={"host": "127.0.0.1", "port": 9100}).ui_url == "http://127.0.0.1:9100/ui/"
    assert Settings(home=tmp_path, ui={"public_url": "https://ops.example/planstack/"}).ui_url == (
        "https://ops.example/planstack/ui/"
    )


def test_planstack_run_prints_the_run_page_and_stops_at_an_approval(tmp_path: Path) -> None:
    calls = ToolCalls()
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"nodes": [{"id": "n1", "tool": "nap", "args": {"label": "a", "seconds": 0.01}}]}))
    steering = Steering(approvals=ApprovalsConfig(plan_tenants=["ops"]))
    app = build_app(registry_factory=lambda: steering_registry(calls), steering=steering, page_url=page)
    store = str(tmp_path / "runs.sqlite3")
    done = CliRunner().invoke(app, ["run", "--plan", str(plan), "--store", store, "--tenant", "dev"])
    assert done.exit_code == 0, done.output
    assert "run page: http://ops.internal:8000/ui/#/runs/run_" in done.output and calls.counts["a"] == 1
    paused = CliRunner().invoke(app, ["run", "--plan", str(plan), "--store", store, "--tenant", "ops"])
    assert paused.exit_code == 3, paused.output
    assert "waiting for approval" in paused.output and "awaiting_approval" in paused.output
    assert calls.counts["a"] == 1  # the plan waits for a person: nothing ran

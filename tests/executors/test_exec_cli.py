"""`planstack run` (executors.cli): plan file, JSON output, resume, the missing-planner error, resume of
a run another process drives, and `planstack runs purge`."""

from __future__ import annotations

import json
import time
from pathlib import Path

from exec_helpers import plan_of, run
from typer.testing import CliRunner

from executors.cli import build_app
from executors.stores import RunRecord, RunsConfig, SqliteRunStore
from planner.plan import Plan

PLAN = plan_of(
    {
        "id": "n1",
        "tool": "search_flights",
        "args": {"origin": "Beijing", "destination": "Hangzhou", "date": "2026-06-12"},
    },
    {"id": "n2", "tool": "check_budget", "args": {"amounts": ["$n1.cheapest.price"], "limit": 2000}},
)


def test_run_plan_file_with_progress_and_summary(tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(PLAN.model_dump_json())
    store = tmp_path / "runs.db"
    result = CliRunner().invoke(build_app(), ["run", "--plan", str(plan_file), "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert "▶ r0 n1 search_flights" in result.output and "✓ r0 n2 check_budget" in result.output
    assert "succeeded" in result.output and "attempts" in result.output

    as_json = CliRunner().invoke(build_app(), ["run", "--plan", str(plan_file), "--store", str(store), "--json"])
    assert as_json.exit_code == 0
    view = json.loads(as_json.stdout)
    assert view["status"] == "succeeded" and [n["node_id"] for n in view["nodes"]] == ["n1", "n2"]

    again = CliRunner().invoke(build_app(), ["run", "--resume", view["run_id"], "--store", str(store), "--json"])
    assert again.exit_code == 0 and json.loads(again.stdout)["run_id"] == view["run_id"]
    other = CliRunner().invoke(
        build_app(), ["run", "--resume", view["run_id"], "--store", str(store), "--tenant", "bob"]
    )
    assert other.exit_code == 2 and "not found" in other.output


def test_request_without_planner_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(build_app(), ["run", "a trip to Hangzhou", "--store", str(tmp_path / "r.db")])
    assert result.exit_code == 2 and "needs the planner" in result.output


def test_request_with_plan_factory(tmp_path: Path) -> None:
    seen: list[str] = []

    async def factory(request: str) -> Plan:
        seen.append(request)
        return PLAN

    result = CliRunner().invoke(
        build_app(plan_factory=factory), ["run", "trip", "--store", str(tmp_path / "r.db"), "--json"]
    )
    assert result.exit_code == 0 and seen == ["trip"]
    assert json.loads(result.stdout)["request"] == "trip"


def test_failed_run_exits_non_zero(tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(
        json.dumps([{"id": "n1", "tool": "get_weather", "args": {"city": "Mars", "date": "2026-06-12"}}])
    )
    result = CliRunner().invoke(build_app(), ["run", "--plan", str(plan_file), "--store", str(tmp_path / "r.db")])
    assert result.exit_code == 1 and "not_found" in result.output


def test_resume_of_a_run_driven_elsewhere_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"

    async def leased_elsewhere() -> None:
        store = SqliteRunStore(store_path)
        record = RunRecord(run_id="run_busy0000000", tenant="default", request="x", plan=PLAN)
        await store.create_run(record, owner="gateway-on-host-b", ttl_s=600)  # a live driver elsewhere
        await store.aclose()

    run(leased_elsewhere())
    result = CliRunner().invoke(build_app(), ["run", "--resume", "run_busy0000000", "--store", str(store_path)])
    assert result.exit_code == 2, result.output
    assert "being executed by a live driver" in result.output and "gateway-on-host-b" in result.output


def test_runs_purge_applies_retention(tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(PLAN.model_dump_json())
    store = str(tmp_path / "runs.db")
    assert CliRunner().invoke(build_app(), ["run", "--plan", str(plan_file), "--store", store]).exit_code == 0
    keep = CliRunner().invoke(build_app(), ["runs", "purge", "--store", store])
    assert keep.exit_code == 0 and json.loads(keep.stdout)["runs_deleted"] == 0  # 30 days by default
    time.sleep(0.2)  # the run is now older than the short retention below
    short = build_app(runs_config=RunsConfig(retention_max_age_s=0.1))
    purged = CliRunner().invoke(short, ["runs", "purge", "--store", store])
    assert purged.exit_code == 0, purged.output
    report = json.loads(purged.stdout)
    assert report["runs_deleted"] == 1 and report["bytes_freed"] > 0 and report["store"].startswith("sqlite://")

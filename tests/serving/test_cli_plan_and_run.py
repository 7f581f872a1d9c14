"""`planstack plan` and `planstack run` through the composition root: plan file, JSON output,
resume, tenants, the store from the settings, the registry with the FAISS knowledge base, and
planning with the engine (the FAKE upstream here: it cannot write plans, so a planned run comes from
the rule-based fallback), or without one (a clear error naming the fix)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from contract.plan import Plan
from executors.stores import RunRecord, SqliteRunStore
from retrieval.embedder import SentenceTransformerEmbedder
from serving.cli import app
from tests.conftest import FAKE_MODEL
from tests.fakes.upstream import FakeBehaviour, ServerThread, create_fake_upstream, free_port
from tests.retrieval.fakes import HashingEmbedder

PLAN = Plan.model_validate(
    {
        "nodes": [
            {
                "id": "n1",
                "tool": "search_flights",
                "args": {"origin": "Beijing", "destination": "Hangzhou", "date": "2026-06-12"},
            },
            {"id": "n2", "tool": "check_budget", "args": {"amounts": ["$n1.cheapest.price"], "limit": 2000}},
        ]
    }
)
REQUEST = "Flights Shanghai to Hangzhou on June 20 and the weather there."


def invoke(env: Mapping[str, str | None], *args: str) -> Result:
    """The CLI in-process with `env` on top of this process's environment (None: a variable unset)."""
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", **env})


def base_env(home: Path, engine_port: int) -> dict[str, str]:
    return {
        "PLANSTACK_HOME": str(home),
        "PLANSTACK_SECRET": "cli-test-secret-" + "0" * 16,
        "PLANSTACK_ENGINE__PORT": str(engine_port),
        "PLANSTACK_ENGINE__CONNECT_TIMEOUT_S": "0.5",
    }


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return base_env(tmp_path / "home", free_port())  # nothing listens there: no engine


@pytest.fixture
def fake_engine(tmp_path: Path) -> Iterator[dict[str, str]]:
    upstream = ServerThread(create_fake_upstream(FAKE_MODEL, FakeBehaviour())).start()
    try:
        yield base_env(tmp_path / "home", upstream.port)
    finally:
        upstream.stop()


def test_run_plan_file_with_progress_summary_json_and_resume(env: dict[str, str], tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(PLAN.model_dump_json())
    store = tmp_path / "runs.db"
    result = invoke(env, "run", "--plan", str(plan_file), "--store", str(store))
    assert result.exit_code == 0, result.output
    assert "▶ r0 n1 search_flights" in result.output and "✓ r0 n2 check_budget" in result.output
    assert "succeeded" in result.output and "attempts" in result.output and str(store) in result.output

    as_json = invoke(env, "run", "--plan", str(plan_file), "--store", str(store), "--json")
    assert as_json.exit_code == 0, as_json.output
    view = json.loads(as_json.stdout)
    assert view["status"] == "succeeded" and [n["node_id"] for n in view["nodes"]] == ["n1", "n2"]

    again = invoke(env, "run", "--resume", view["run_id"], "--store", str(store), "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["run_id"] == view["run_id"]
    other = invoke(env, "run", "--resume", view["run_id"], "--store", str(store), "--tenant", "bob")
    assert other.exit_code == 2 and "not found" in other.output


def test_the_store_comes_from_the_settings_file(env: dict[str, str], tmp_path: Path) -> None:
    """No --store and no PLANSTACK_HOME: the run store is the one of the configured home."""
    home = tmp_path / "configured-home"
    config = tmp_path / "planstack.yaml"
    config.write_text(f"home: {home}\n")
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(PLAN.model_dump_json())
    settings_env: dict[str, str | None] = {**env, "PLANSTACK_HOME": None, "PLANSTACK_CONFIG": str(config)}
    result = invoke(settings_env, "run", "--plan", str(plan_file), "--json")
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    assert (home / "runs.sqlite3").is_file()
    resumed = invoke(settings_env, "run", "--resume", run_id, "--json")  # found again in the same store
    assert resumed.exit_code == 0 and json.loads(resumed.stdout)["status"] == "succeeded"


def test_run_uses_the_knowledge_base_once_an_index_is_built(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = HashingEmbedder()
    monkeypatch.setattr(SentenceTransformerEmbedder, "from_config", classmethod(lambda _cls, _cfg: embedder))
    assert invoke(env, "index", "build", "--collection", "travel").exit_code == 0
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(
        json.dumps([{"id": "n1", "tool": "lookup_knowledge", "args": {"query": "hotel caps per city London Paris"}}])
    )
    result = invoke(env, "run", "--plan", str(plan_file), "--json")
    assert result.exit_code == 0, result.output
    passages = json.loads(result.stdout)["nodes"][0]["output"]["passages"]
    # travel/hotel-caps.md is a document of the FAISS corpus, not of the keyword fallback's passages
    assert passages[0]["source"] == "travel/hotel-caps.md"
    assert embedder.calls, "the query was embedded: the FAISS index answered"


def test_a_request_is_planned_with_the_engine_then_run(fake_engine: dict[str, str]) -> None:
    result = invoke(fake_engine, "run", REQUEST, "--json")
    assert result.exit_code == 0, result.output
    view = json.loads(result.stdout)
    assert view["request"] == REQUEST and view["status"] == "succeeded"
    assert {n["tool"] for n in view["nodes"]} >= {"search_flights", "get_weather"}
    assert "planned via fallback" in result.stderr  # the fake upstream cannot write plans


def test_a_request_without_an_engine_is_a_clear_error(env: dict[str, str]) -> None:
    result = invoke(env, "run", REQUEST)  # a request the planner needs the engine for (nothing missing)
    assert result.exit_code == 1, result.output
    assert "not reachable" in result.output and "planstack engine start" in result.output


def test_failed_run_exits_non_zero(env: dict[str, str], tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(
        json.dumps([{"id": "n1", "tool": "get_weather", "args": {"city": "Mars", "date": "2026-06-12"}}])
    )
    result = invoke(env, "run", "--plan", str(plan_file), "--store", str(tmp_path / "r.db"))
    assert result.exit_code == 1 and "not_found" in result.output


def test_exactly_one_source_of_work(env: dict[str, str]) -> None:
    result = invoke(env, "run", "a trip", "--resume", "run_0123456789ab")
    assert result.exit_code == 2 and "exactly one" in result.output


def test_plan_prints_the_tree_the_json_and_the_path(fake_engine: dict[str, str]) -> None:
    result = invoke(fake_engine, "plan", REQUEST)
    assert result.exit_code == 0, result.output
    assert "search_flights" in result.stdout and "path: fallback" in result.stdout
    as_json = invoke(fake_engine, "plan", REQUEST, "--json", "--tenant", "acme")
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["path"] == "fallback"


def test_plan_without_an_engine_names_the_fix(env: dict[str, str]) -> None:
    result = invoke(env, "plan", REQUEST)
    assert result.exit_code == 1
    assert "not reachable" in result.output and "planstack engine start" in result.output


def test_resume_of_a_run_driven_elsewhere_is_refused_with_a_clear_message(env: dict[str, str], tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"

    async def leased_elsewhere() -> None:
        store = SqliteRunStore(store_path)
        record = RunRecord(run_id="run_busy0000000", tenant="default", request="x", plan=PLAN)
        await store.create_run(record, owner="gateway-on-host-b", ttl_s=600)  # a live driver elsewhere
        await store.aclose()

    asyncio.run(leased_elsewhere())
    result = invoke(env, "run", "--resume", "run_busy0000000", "--store", str(store_path))
    assert result.exit_code == 2, result.output
    assert "being executed by a live driver" in result.output and "gateway-on-host-b" in result.output


def test_runs_purge_applies_retention(env: dict[str, str], tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(PLAN.model_dump_json())
    store = str(tmp_path / "runs.db")
    assert invoke(env, "run", "--plan", str(plan_file), "--store", store).exit_code == 0
    keep = invoke(env, "runs", "purge", "--store", store)
    assert keep.exit_code == 0 and json.loads(keep.stdout)["runs_deleted"] == 0  # 30 days by default
    time.sleep(0.2)  # the run is now older than the short retention below
    purged = invoke({**env, "PLANSTACK_RUNS__RETENTION_MAX_AGE_S": "0.1"}, "runs", "purge", "--store", store)
    assert purged.exit_code == 0, purged.output
    report = json.loads(purged.stdout)
    assert report["runs_deleted"] == 1 and report["bytes_freed"] > 0 and report["store"].startswith("sqlite://")


def test_the_store_url_comes_from_the_settings(env: dict[str, str], tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(PLAN.model_dump_json())
    url = f"sqlite://{tmp_path / 'elsewhere.sqlite3'}"
    result = invoke({**env, "PLANSTACK_RUNS__STORE_URL": url}, "run", "--plan", str(plan_file))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "elsewhere.sqlite3").is_file() and url in result.output
    bad = invoke({**env, "PLANSTACK_RUNS__STORE_URL": "nosuch://db"}, "run", "--plan", str(plan_file))
    assert bad.exit_code == 2 and "unknown run store" in bad.output

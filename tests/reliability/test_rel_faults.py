"""Faults injected below the API: tool timeouts and exceptions, a full or read-only run store, and
a gateway killed with SIGKILL in the middle of a run (then restarted and resumed over HTTP).

The engine-kill fault, which needs a dedicated vLLM engine, is in test_rel_engine_kill.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from executors.config import ExecutorConfig
from executors.runs import RunService, RunView
from executors.scheduler import DagScheduler
from executors.stores import RunsConfig, RunStoreError, SqliteRunStore
from serving.app import create_app
from serving.settings import EngineSettings, Settings
from serving.stack import build_stack
from tests.conftest import API_KEYS, FAKE_MODEL, KEY_A
from tests.fakes.upstream import ServerThread, free_port
from tests.reliability.helpers import check_error_shape, fault_registry, plan_of, sse_events

REPO = Path(__file__).resolve().parents[2]


def calls(path: Path) -> Counter[str]:
    return Counter(path.read_text().split()) if path.exists() else Counter()


@pytest.fixture
def fault_gateway(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path]]:
    """A real gateway over the demo + fault tools (no engine needed for given plans; no re-plans)."""
    settings = Settings(
        home=tmp_path,
        api_keys=SecretStr(API_KEYS),
        engine=EngineSettings(port=1),
        executors=ExecutorConfig(max_replans=0),
    )
    registry = fault_registry(tmp_path / "calls.txt")
    app = create_app(build_stack(settings, engine_model=FAKE_MODEL, registry=registry))
    server = ServerThread(app).start()
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=60) as client:
            yield client, tmp_path / "calls.txt"
    finally:
        server.stop()


def test_tool_timeouts_and_exceptions_fail_the_run_cleanly(fault_gateway: tuple[httpx.Client, Path]) -> None:
    client, calls_file = fault_gateway
    cases = {
        "hang": ("timeout", 2),  # per-attempt timeout, retried (retryable), then given up
        "boom": ("tool_exception", 1),  # an unexpected exception is not retried
        "flaky_io": ("unavailable", 3),  # a retryable error uses every attempt
    }
    for tool, (error_type, attempts) in cases.items():
        plan = {"nodes": [{"id": "n1", "tool": "step", "args": {"label": f"before-{tool}"}},
                          {"id": "n2", "tool": tool, "args": {"label": tool}, "depends_on": ["n1"]},
                          {"id": "n3", "tool": "step", "args": {"label": f"after-{tool}"}, "depends_on": ["n2"]}]}  # fmt: skip
        response = client.post("/v1/runs", json={"request": f"fault {tool}", "plan": plan, "wait": True})
        check_error_shape(response)
        assert response.status_code == 200, response.text
        run = response.json()
        nodes = {node["node_id"]: node for node in run["nodes"]}
        assert run["status"] == "failed" and run["error"]["type"] == "replans_exhausted", run["error"]
        assert nodes["n1"]["status"] == "succeeded"
        assert nodes["n2"]["status"] == "failed" and nodes["n2"]["error"]["type"] == error_type
        assert nodes["n2"]["attempts"] == attempts
        assert nodes["n3"]["status"] == "skipped" and nodes["n3"]["error"]["type"] == "upstream_failed"
        assert "Traceback" not in str(run)
    assert calls(calls_file) == Counter(
        {"before-hang": 1, "hang": 2, "before-boom": 1, "boom": 1, "before-flaky_io": 1, "flaky_io": 3}
    )
    assert client.get("/v1/models").status_code == 200  # the gateway is unharmed


def _integrity(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def test_disk_full_store_gives_a_clear_error_and_no_corrupt_records(tmp_path: Path) -> None:
    """SQLITE_FULL for real: the database may not grow past its current size (PRAGMA max_page_count)."""
    store = SqliteRunStore(tmp_path / "runs.db", config=RunsConfig(lease_ttl_s=0.5, heartbeat_s=0.1))
    service = RunService(store, DagScheduler(fault_registry(tmp_path / "calls.txt")))
    big = "x" * 20_000  # a result too large for the pages left
    plan = plan_of(
        {"id": "n1", "tool": "step", "args": {"label": "small"}},
        {"id": "n2", "tool": "step", "args": {"label": big}, "depends_on": ["n1"]},
        {"id": "n3", "tool": "step", "args": {"label": "last"}, "depends_on": ["n2"]},
    )

    async def fill_then_run() -> RunView:
        run_id = await service.start("alice", "disk full", plan)
        pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
        store._conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is now full
        with pytest.raises(RunStoreError, match="disk is full") as caught:
            await service.wait("alice", run_id)
        assert caught.value.retryable and caught.value.structured()["type"] == "store_unavailable"
        with pytest.raises(RunStoreError):  # new runs are refused with the same clear error
            await service.start("alice", "another", plan_of({"id": "n1", "tool": "step", "args": {"label": big}}))
        view = await service.get("alice", run_id)
        assert view is not None
        return view

    view = asyncio.run(fill_then_run())
    # resumable, not failed: nobody drives it (its lease could not even be released, so it expires)
    assert view.status in ("running", "interrupted") and view.error is None
    assert big not in {n.args.get("label") if n.args else None for n in view.nodes}
    store.close()
    assert _integrity(tmp_path / "runs.db") == "ok"
    # Space comes back (a fresh connection has no page cap): the run resumes and completes once the
    # dead driver's lease has expired (0.5 s here).
    resumed_store = SqliteRunStore(tmp_path / "runs.db")
    resumed = RunService(resumed_store, DagScheduler(fault_registry(tmp_path / "calls.txt")))

    async def resume() -> RunView:
        while (await resumed.get("alice", view.run_id)).status != "interrupted":  # type: ignore[union-attr]
            await asyncio.sleep(0.1)
        await resumed.resume("alice", view.run_id)
        return await resumed.wait("alice", view.run_id)

    done = asyncio.run(resume())
    assert done.status == "succeeded"
    assert [n.node_id for n in done.nodes] == ["n1", "n2", "n3"]
    assert calls(tmp_path / "calls.txt")["small"] == 1  # the committed node was not redone
    resumed_store.close()
    assert _integrity(tmp_path / "runs.db") == "ok"


def test_read_only_store_is_a_503_through_the_gateway(tmp_path: Path) -> None:
    """A store that refuses every write (as a read-only file or mount does): 503, never a 500."""
    settings = Settings(home=tmp_path, api_keys=SecretStr(API_KEYS), engine=EngineSettings(port=1))
    app = create_app(build_stack(settings, engine_model=FAKE_MODEL, registry=fault_registry(tmp_path / "calls.txt")))
    server = ServerThread(app).start()
    plan = {"nodes": [{"id": "n1", "tool": "step", "args": {"label": "a"}}]}
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=60) as client:
            done = client.post("/v1/runs", json={"request": "ok", "plan": plan, "wait": True}).json()
            store: SqliteRunStore = app.state.services.run_gateway.runs.store
            store._conn.execute("PRAGMA query_only = ON")  # every write now fails: read-only database
            refused = client.post("/v1/runs", json={"request": "refused", "plan": plan, "wait": True})
            check_error_shape(refused)
            assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
            assert refused.json()["error"]["code"] == "run_store_unavailable"
            assert "read-only" in refused.json()["error"]["message"]
            assert str(tmp_path) not in refused.text  # no server paths in the answer
            assert client.post(f"/v1/runs/{done['run_id']}/resume").status_code == 200  # reads still work
            assert client.get(f"/v1/runs/{done['run_id']}").json()["status"] == "succeeded"
    finally:
        server.stop()
    assert _integrity(tmp_path / "runs.sqlite3") == "ok"
    assert calls(tmp_path / "calls.txt") == Counter({"a": 1})


# A short lease, so that a killed gateway's run reads `interrupted` soon; no automatic takeover here
# (tests/reliability/test_rel_multi_gateway.py covers that): this test resumes by hand.
MANUAL_RESUME = {
    "PLANSTACK_RUNS__LEASE_TTL_S": "1",
    "PLANSTACK_RUNS__HEARTBEAT_S": "0.2",
    "PLANSTACK_RUNS__TAKEOVER": "false",
}


def _start_gateway(home: Path, port: int, calls_file: Path, block: str | None) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "tests.reliability.gateway_worker", str(home), str(port), str(calls_file)]
    return subprocess.Popen(
        args + ([block] if block else []),
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **MANUAL_RESUME},
    )


def _wait_up(url: str, proc: subprocess.Popen[str]) -> None:
    with httpx.Client(timeout=2) as client:
        for _ in range(300):
            assert proc.poll() is None, "the gateway process exited during start-up"
            try:
                if client.get(url + "/v1/models", headers={"Authorization": f"Bearer {KEY_A}"}).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.1)  # a pause that also notices an early exit
    raise AssertionError("the gateway did not start")


@pytest.mark.slow
def test_gateway_killed_mid_run_resumes_without_redoing_or_losing_nodes(tmp_path: Path) -> None:
    home, calls_file, port = tmp_path / "home", tmp_path / "calls.txt", free_port()
    url = f"http://127.0.0.1:{port}"
    plan = {"nodes": [
        {"id": "n1", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}},
        {"id": "n2", "tool": "step", "args": {"label": "a"}},
        {"id": "n3", "tool": "step", "args": {"label": "b"}, "depends_on": ["n1", "n2"]},
        {"id": "n4", "tool": "step", "args": {"label": "$n3.text"}, "depends_on": ["n3"]},
    ]}  # fmt: skip
    first = _start_gateway(home, port, calls_file, block="b")
    try:
        _wait_up(url, first)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30) as client:
            created = client.post("/v1/runs", json={"request": "kill me", "plan": plan})
            assert created.status_code == 202, created.text
            run_id = created.json()["run_id"]
            assert first.stdout is not None
            assert first.stdout.readline().strip() == "READY b"  # n3 is executing now
        first.kill()  # SIGKILL: no clean-up at all
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
        if first.stdout is not None:
            first.stdout.close()
    assert calls(calls_file) == Counter({"a": 1, "b": 1})
    second = _start_gateway(home, port, calls_file, block=None)
    try:
        _wait_up(url, second)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=60) as client:
            for _ in range(300):  # the dead driver's lease expires within a second
                before = client.get(f"/v1/runs/{run_id}").json()
                if before["status"] == "interrupted":
                    break
                assert before["status"] == "running"  # until then it is not resumable
                assert client.post(f"/v1/runs/{run_id}/resume").status_code in (200, 409)
                time.sleep(0.1)
            assert before["status"] == "interrupted"
            committed = {n["node_id"]: n for n in before["nodes"]}
            assert set(committed) == {"n1", "n2"}
            assert client.post(f"/v1/runs/{run_id}/resume").status_code == 200
            with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:  # ends with the run
                events = sse_events(list(stream.iter_lines()))
            after = client.get(f"/v1/runs/{run_id}").json()
    finally:
        second.kill()
        second.wait(timeout=30)
        if second.stdout is not None:
            second.stdout.close()
    assert after["status"] == "succeeded", after["error"]
    final = {n["node_id"]: n for n in after["nodes"]}
    assert set(final) == {"n1", "n2", "n3", "n4"}  # nothing lost
    for node_id, node in committed.items():  # nothing redone or rewritten
        assert final[node_id]["output_sha256"] == node["output_sha256"]
        assert final[node_id]["finished_at"] == node["finished_at"]
    assert calls(calls_file) == Counter({"a": 1, "b": 2, "done-b": 1})  # only the interrupted node ran again
    kinds = [kind for kind, _ in events]
    assert (
        kinds.count("run_started") == 2 and kinds.count("node_finished") == 4 and kinds[-2:] == ["run_finished", "done"]
    )

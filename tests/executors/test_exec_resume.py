"""Crash and resume: a run killed between nodes resumes without redoing committed nodes.

The plan runs in a child process whose tool kills it (os._exit, or SIGKILL from the test once the
tool says READY); once the dead driver's lease has expired, the test resumes the run in-process from
the same store (SQLite file or PostgreSQL database) and counts tool calls through a file the tools
append to.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from exec_helpers import counting_registry, plan_of, run

from contract.plan import Plan
from executors.runs import RunService, RunView
from executors.scheduler import DagScheduler
from executors.stores import RunEvent, RunsConfig, open_run_store

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def start_child(tmp_path: Path, store_url: str, plan: Plan) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [
            sys.executable,
            str(HERE / "crash_worker.py"),
            store_url,
            str(tmp_path / "calls.txt"),
            "run_crash",
            plan.model_dump_json(),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def resume(tmp_path: Path, store_url: str) -> tuple[RunView, RunView, list[RunEvent]]:
    """Wait for the dead driver's lease to expire (the run then reads `interrupted`), resume, finish."""

    async def go() -> tuple[RunView, RunView, list[RunEvent]]:
        store = open_run_store(store_url, config=RunsConfig(lease_ttl_s=5.0, heartbeat_s=0.5))
        service = RunService(store, DagScheduler(counting_registry(tmp_path / "calls.txt")))
        try:
            for _ in range(300):
                before = await service.get("alice", "run_crash")
                assert before is not None and before.status in ("running", "interrupted")
                if before.status == "interrupted":
                    break
                await asyncio.sleep(0.1)
            await service.resume("alice", "run_crash")
            after = await service.wait("alice", "run_crash")
            return before, after, [e async for e in service.events("alice", "run_crash")]
        finally:
            await service.aclose()
            await store.aclose()

    return run(go())


def calls(tmp_path: Path) -> Counter[str]:
    return Counter((tmp_path / "calls.txt").read_text().split())


def check_resumed(
    before: RunView, after: RunView, events: list[RunEvent], tmp_path: Path, labels: dict[str, str]
) -> None:
    assert before.status == "interrupted"
    assert after.status == "succeeded", after.error
    committed = {n.node_id: n for n in before.nodes}
    final = {n.node_id: n for n in after.nodes}
    assert set(final) == set(labels) and all(n.status == "succeeded" for n in final.values())
    counted = calls(tmp_path)
    for node_id, result in committed.items():
        assert counted[labels[node_id]] == 1, f"{node_id} was run again after resume"
        assert final[node_id].output_sha256 == result.output_sha256  # nothing lost or rewritten
    kinds = [e.type for e in events]
    assert kinds.count("run_started") == 2 and kinds[-1] == "run_finished"
    assert kinds.count("node_finished") == len(labels)


def test_resume_after_process_exit_mid_run(tmp_path: Path, store_url: str) -> None:
    plan = plan_of(
        {"id": "n1", "tool": "step", "args": {"label": "a"}},
        {"id": "n2", "tool": "step", "args": {"label": "b"}},
        {"id": "n3", "tool": "step", "args": {"label": "c"}, "depends_on": ["n1", "n2"]},
        {"id": "n4", "tool": "crash", "args": {"label": "d"}, "depends_on": ["n3"]},
        {"id": "n5", "tool": "step", "args": {"label": "$n4.label"}, "depends_on": ["n4"]},
    )
    child = start_child(tmp_path, store_url, plan)
    assert child.wait(timeout=60) == 17  # the crash tool's os._exit
    assert calls(tmp_path) == Counter({"a": 1, "b": 1, "c": 1, "d": 1})
    before, after, events = resume(tmp_path, store_url)
    assert {n.node_id for n in before.nodes} == {"n1", "n2", "n3"}
    check_resumed(before, after, events, tmp_path, {"n1": "a", "n2": "b", "n3": "c", "n4": "d", "n5": "d"})
    assert calls(tmp_path) == Counter({"a": 1, "b": 1, "c": 1, "d": 3})  # d: crashed call, retry, n5


def test_resume_after_sigkill_mid_node(tmp_path: Path, store_url: str) -> None:
    plan = plan_of(
        {"id": "n1", "tool": "step", "args": {"label": "a"}},
        {"id": "n2", "tool": "block", "args": {"label": "b"}, "depends_on": ["n1"]},
        {"id": "n3", "tool": "step", "args": {"label": "c"}, "depends_on": ["n2"]},
    )
    child = start_child(tmp_path, store_url, plan)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "READY"  # blocks until the tool runs: no polling
    child.kill()
    child.wait(timeout=30)
    child.stdout.close()
    before, after, events = resume(tmp_path, store_url)
    assert [n.node_id for n in before.nodes] == ["n1"]
    check_resumed(before, after, events, tmp_path, {"n1": "a", "n2": "b", "n3": "c"})
    assert calls(tmp_path) == Counter({"a": 1, "b": 2, "c": 1})

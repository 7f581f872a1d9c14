"""A tenant cannot fill the store or the gateway for others:
per-tenant caps on active runs, stored runs and stored bytes (429) — plan records and cached catalogs
included —, plan size (413), node output size (the node fails, typed), retention on a timer inside the
gateway, bounded SSE followers (429), idle followers woken by nothing but their own run, and a private
(0600) run store file.

Real gateways (uvicorn on loopback) over the demo + fault tools, given plans (no engine needed).
"""

from __future__ import annotations

import contextlib
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from executors.config import ExecutorConfig
from executors.stores import RunsConfig
from serving.app import create_app
from serving.settings import EngineSettings, Settings
from serving.stack import build_stack
from tests.conftest import API_KEYS, FAKE_MODEL, KEY_A, KEY_B, FakeStack
from tests.fakes.upstream import ServerThread
from tests.reliability.helpers import check_error_shape, fault_registry

NAP = {"nodes": [{"id": "n1", "tool": "nap", "args": {"label": "long", "seconds": 20}}]}
QUICK = {"nodes": [{"id": "n1", "tool": "step", "args": {"label": "quick"}}]}
HELD = {"nodes": [{"id": "n1", "tool": "step", "args": {"label": "held"}}]}  # blocks until the server stops


class QuotaGateway:
    def __init__(self, app: Any, server: ServerThread) -> None:
        self.app = app
        self.server = server

    def client(self, key: str = KEY_A) -> httpx.Client:
        return httpx.Client(base_url=self.server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


@pytest.fixture
def gateway_with(tmp_path: Path) -> Iterator[Callable[..., QuotaGateway]]:
    servers: list[ServerThread] = []

    def make(**runs: Any) -> QuotaGateway:
        settings = Settings(
            home=tmp_path,
            api_keys=SecretStr(API_KEYS),
            engine=EngineSettings(port=1),
            executors=ExecutorConfig(max_replans=0),
            runs=RunsConfig(**{"lease_ttl_s": 30, "heartbeat_s": 1, **runs}),
        )
        app = create_app(
            build_stack(
                settings, engine_model=FAKE_MODEL, registry=fault_registry(tmp_path / "calls.txt", block_label="held")
            )
        )
        server = ServerThread(app).start()
        servers.append(server)
        return QuotaGateway(app, server)

    yield make
    for server in servers:
        server.stop()


def post_run(client: httpx.Client, plan: dict[str, Any], wait: bool = False) -> httpx.Response:
    response = client.post("/v1/runs", json={"request": "quota", "plan": plan, "wait": wait})
    check_error_shape(response)
    return response


def refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code, response.text


def test_active_and_stored_run_caps_are_per_tenant(gateway_with: Callable[..., QuotaGateway]) -> None:
    gateway = gateway_with(max_active_runs_per_tenant=2, max_stored_runs_per_tenant=3)
    with gateway.client(KEY_A) as a, gateway.client(KEY_B) as b:
        assert post_run(a, NAP).status_code == 202 and post_run(a, NAP).status_code == 202
        busy = post_run(a, NAP)
        refused(busy, 429, "too_many_active_runs")
        assert busy.headers["retry-after"] == "5"
        assert post_run(b, QUICK, wait=True).status_code == 200  # tenant B is not affected
        assert post_run(a, QUICK, wait=False).status_code == 429  # still two executing
    with gateway.client(KEY_B) as b:
        assert post_run(b, QUICK, wait=True).status_code == 200
        assert post_run(b, QUICK, wait=True).status_code == 200
        refused(post_run(b, QUICK, wait=True), 429, "stored_runs_quota")  # 3 stored for B


def test_stored_bytes_cap_keeps_one_tenant_from_filling_the_store(gateway_with: Callable[..., QuotaGateway]) -> None:
    gateway = gateway_with(max_stored_bytes_per_tenant=16 * 1024)
    big = {"nodes": [{"id": "n1", "tool": "step", "args": {"label": "x" * 3000}}]}
    with gateway.client(KEY_A) as a, gateway.client(KEY_B) as b:
        accepted = 0
        for _ in range(20):
            response = post_run(a, big, wait=True)
            if response.status_code != 200:
                refused(response, 429, "stored_bytes_quota")
                break
            accepted += 1
        assert 1 <= accepted < 20  # refused at the door once the tenant's bytes are used up
        assert post_run(b, big, wait=True).status_code == 200  # the others still have their share


def test_plan_size_caps_are_a_413_before_anything_is_stored(gateway_with: Callable[..., QuotaGateway]) -> None:
    gateway = gateway_with(max_plan_nodes=3, max_plan_bytes=2048)
    many = {"nodes": [{"id": f"n{i}", "tool": "step", "args": {"label": str(i)}} for i in range(1, 5)]}
    wide = {"nodes": [{"id": "n1", "tool": "step", "args": {"label": "w" * 3000}}]}
    with gateway.client() as client:
        refused(post_run(client, many), 413, "plan_too_large")
        response = post_run(client, wide)
        refused(response, 413, "plan_too_large")
        assert response.json()["error"]["param"] == "plan"
    assert not (Path(gateway.app.state.services.settings.home) / "calls.txt").exists()  # nothing ran


def test_an_oversized_node_output_fails_the_node_typed(gateway_with: Callable[..., QuotaGateway]) -> None:
    gateway = gateway_with(max_node_output_bytes=2048)
    plan = {"nodes": [
        {"id": "n1", "tool": "step", "args": {"label": "y" * 4000}},
        {"id": "n2", "tool": "step", "args": {"label": "$n1.text"}, "depends_on": ["n1"]},
    ]}  # fmt: skip
    with gateway.client() as client:
        run = post_run(client, plan, wait=True).json()
    nodes = {n["node_id"]: n for n in run["nodes"]}
    assert nodes["n1"]["status"] == "failed" and nodes["n1"]["output"] is None
    assert nodes["n1"]["error"]["type"] == "output_too_large" and nodes["n1"]["error"]["retryable"] is False
    assert nodes["n2"]["status"] == "skipped" and run["status"] == "failed"


def test_retention_purges_old_runs_on_a_timer(gateway_with: Callable[..., QuotaGateway]) -> None:
    gateway = gateway_with(retention_max_age_s=0.5, purge_interval_s=0.2)
    with gateway.client() as client:
        run_id = post_run(client, QUICK, wait=True).json()["run_id"]
        live = post_run(client, NAP).json()["run_id"]  # executing: never purged
        deadline = time.monotonic() + 30
        while client.get(f"/v1/runs/{run_id}").status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.get(f"/v1/runs/{run_id}").status_code == 404
        assert client.get(f"/v1/runs/{live}").json()["status"] == "running"


def test_followers_are_bounded_per_tenant_and_in_total(gateway_with: Callable[..., QuotaGateway]) -> None:
    gateway = gateway_with(max_followers_per_tenant=2, max_followers_total=3)
    followers = gateway.app.state.services.run_gateway.followers
    with gateway.client(KEY_A) as a, gateway.client(KEY_B) as b, contextlib.ExitStack() as open_streams:
        run_a = post_run(a, NAP).json()["run_id"]
        run_b = post_run(b, NAP).json()["run_id"]
        for _ in range(2):
            stream = open_streams.enter_context(a.stream("GET", f"/v1/runs/{run_a}/events"))
            assert stream.status_code == 200
        over = a.get(f"/v1/runs/{run_a}/events")
        check_error_shape(over)
        refused(over, 429, "too_many_followers")
        first_b = b.stream("GET", f"/v1/runs/{run_b}/events")
        assert first_b.__enter__().status_code == 200
        refused(b.get(f"/v1/runs/{run_b}/events"), 429, "too_many_followers")  # 3 in total on this gateway
        first_b.__exit__(None, None, None)  # a follower leaves: its slot comes back
        deadline = time.monotonic() + 10
        while followers.in_use > 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        with b.stream("GET", f"/v1/runs/{run_b}/events") as again:
            assert again.status_code == 200
    deadline = time.monotonic() + 10
    while followers.in_use and time.monotonic() < deadline:
        time.sleep(0.05)
    assert followers.in_use == 0


def test_idle_followers_are_not_woken_by_other_runs(gateway_with: Callable[..., QuotaGateway]) -> None:
    gateway = gateway_with(max_followers_per_tenant=40, max_followers_total=40)
    feed = gateway.app.state.services.run_gateway.runs.store.feed
    busy = {"nodes": [{"id": f"n{i}", "tool": "step", "args": {"label": f"s{i}"}} for i in range(1, 7)]}
    with gateway.client() as client:
        idle_run = post_run(client, HELD).json()["run_id"]  # quiet for the whole test, however slow the machine
        stop = threading.Event()

        def follow() -> None:
            try:
                with gateway.client() as own, own.stream("GET", f"/v1/runs/{idle_run}/events") as stream:
                    for line in stream.iter_lines():
                        if stop.is_set() or line == "event: done":
                            return
            except httpx.HTTPError:
                if not stop.is_set():  # the server cuts the held run's streams only when the test is over
                    raise

        threads = [threading.Thread(target=follow, daemon=True) for _ in range(20)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20

        def settled() -> bool:  # all 20 follow the held run and have read its events so far
            subs = feed._subs.get(idle_run, ())
            return len(subs) == 20 and all(sub.seen > 0 for sub in subs)

        while not settled() and time.monotonic() < deadline:
            time.sleep(0.05)
        idle = list(feed._subs.get(idle_run, ()))
        assert settled()
        woken_before = [sub.wakeups for sub in idle]
        for _ in range(5):  # 5 other runs of 6 nodes: 70 events the idle followers must not hear about
            done = post_run(client, busy, wait=True).json()
            assert done["status"] == "succeeded"
        with client.stream("GET", f"/v1/runs/{done['run_id']}/events") as replay:
            assert sum(1 for line in replay.iter_lines() if line.startswith("event: node_")) == 12
        assert [sub.wakeups for sub in idle] == woken_before  # not one wake-up for the idle followers
        stop.set()


def test_the_gateway_s_run_store_file_is_private(gateway_with: Callable[..., QuotaGateway], tmp_path: Path) -> None:
    gateway = gateway_with()
    with gateway.client() as client:
        assert post_run(client, QUICK, wait=True).status_code == 200
    for suffix in ("", "-wal", "-shm"):
        path = tmp_path / f"runs.sqlite3{suffix}"
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


WEATHER = {"nodes": [{"id": "n1", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}}]}


def large_tools(tag: str, count: int = 4) -> list[dict[str, Any]]:
    """`count` tools of about 6.5 KB each: 20 optional string arguments with long descriptions."""
    props = {f"field_{j}": {"type": "string", "description": f"{tag} " + "d" * 300} for j in range(20)}
    return [
        {"type": "function", "function": {
            "name": f"lookup_{i}", "description": "Look a record up", "parameters": {"type": "object", "properties": props}}}
        for i in range(count)
    ]  # fmt: skip


def test_plan_records_count_toward_the_tenant_s_stored_bytes(fake_stack_factory: Callable[..., FakeStack]) -> None:
    """Every planning answer is kept (request and the client's tools) under its plan id for feedback; those
    records used to count toward no quota: 100 plans with large tool schemas kept about 100 MB. Now the
    tenant's plan records (and its catalog verdicts cached at the door) count with its runs: once it keeps
    its cap, planning (and runs, and imports) answer 429 until the records expire (here after
    `runs.retention_max_age_s`, 6 s: no record outlives it); another tenant plans on."""
    cap = 64 * 1024
    stack = fake_stack_factory(runs=RunsConfig(max_stored_bytes_per_tenant=cap, retention_max_age_s=6))
    stack.behaviour.reply = '{"nodes": []}'  # the fake model chooses no tool: every answer is a 200
    tools = large_tools("a")
    with stack.gateway.client(KEY_A) as a, stack.gateway.client(KEY_B) as b:
        answers = []
        for i in range(100):
            response = a.post("/v1/plans", json={"request": f"Look record {i} up", "tools": tools})
            check_error_shape(response)
            answers.append(response)
            if response.status_code != 200:
                break
        accepted = [r.json()["plan_id"] for r in answers if r.status_code == 200]
        assert 2 <= len(accepted) < 20  # ~26 KB a record: refused once the tenant keeps its 64 KiB
        refused(answers[-1], 429, "stored_bytes_quota")
        message = answers[-1].json()["error"]["message"]
        assert "plan records" in message
        # no demonstrations yet: what it keeps outside the store is its catalog's verdict cached at the door
        outside = re.search(r"outside the store (\d+)", message)
        assert outside is not None and 10_000 < int(outside.group(1)) < 64_000, message
        refused(post_run(a, WEATHER, wait=True), 429, "stored_bytes_quota")  # runs share the same bytes
        imported = a.post("/v1/demonstrations", content='{"request": "weather", "plan": {"nodes": []}}\n')
        refused(imported, 429, "stored_bytes_quota")
        assert b.post("/v1/plans", json={"request": "Look it up", "tools": large_tools("b")}).status_code == 200
        rejected = a.post(f"/v1/plans/{accepted[0]}/feedback", json={"accepted": False})
        assert rejected.status_code == 200  # the records were kept: feedback finds them
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the records expire after the retention age
            again = a.post("/v1/plans", json={"request": "Look record 0 up", "tools": tools})
            if again.status_code == 200:
                break
            refused(again, 429, "stored_bytes_quota")
            time.sleep(0.5)
        assert again.status_code == 200
        assert a.post(f"/v1/plans/{accepted[0]}/feedback", json={"accepted": False}).status_code == 404  # expired

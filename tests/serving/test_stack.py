"""The composition root: one stack built from settings serves the app, the CLI and the tests; one
engine client (and its slots, metrics and errors) carries chat, planner and re-planner traffic."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from executors.config import ExecutorConfig
from planner.config import PlannerConfig
from serving.app import create_app
from serving.engine_llm import EnginePlannerLLM
from serving.errors import EngineUnavailableError
from serving.settings import GatewaySettings, Settings
from serving.stack import build_stack
from tests.conftest import FAKE_MODEL, KEY_A, gateway_settings
from tests.fakes.upstream import FakeBehaviour, ServerThread, create_fake_upstream
from tests.reliability.helpers import REQUEST, fault_registry, plan_of

pytestmark = pytest.mark.fake_upstream

CHAT = {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "hi"}]}


def test_the_app_the_planner_and_the_runs_share_the_stacks_objects(tmp_path: Path) -> None:
    stack = build_stack(Settings(home=tmp_path, secret=SecretStr("s" * 32)), engine_model=FAKE_MODEL)
    assert isinstance(stack.planner.llm, EnginePlannerLLM) and stack.planner.llm.engine is stack.engine
    assert set(stack.planner.catalog.names()) == set(stack.registry.names())  # the planner plans over the tools
    app = create_app(stack)
    services = app.state.services
    assert app.state.stack is stack and services.engine is stack.engine and services.metrics is stack.metrics
    assert services.planning().planner is stack.planner


def test_start_opens_the_configured_store_and_aclose_closes_it(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, secret=SecretStr("s" * 32))
    plan = plan_of({"id": "n1", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}})

    async def go() -> str:
        stack = build_stack(settings, engine_model=FAKE_MODEL)
        with pytest.raises(EngineUnavailableError):
            stack.run_service()  # not started: no store yet
        async with stack:
            view = await stack.run_service().run("alice", "weather", plan)
        assert stack.runs is None and stack.store is None
        async with stack:  # a stack can be started again: same store, same run
            again = await stack.run_service().get("alice", view.run_id)
            assert again is not None
        await build_stack(settings, engine_model=FAKE_MODEL).aclose()  # never started: closes what it made
        return view.status

    assert asyncio.run(go()) == "succeeded"
    assert (tmp_path / "runs.sqlite3").is_file()


@pytest.fixture
def one_slot_gateway(tmp_path: Path) -> Any:
    behaviour = FakeBehaviour(delay_s=1.5)
    upstream = ServerThread(create_fake_upstream(FAKE_MODEL, behaviour)).start()
    settings = gateway_settings(
        tmp_path,
        upstream.url,
        gateway=GatewaySettings(max_concurrent_upstream=1, max_concurrent_upstream_per_tenant=1),
        planner=PlannerConfig(max_retries=0),
    )
    gateway = ServerThread(create_app(settings, engine_model=FAKE_MODEL, model_dir=None)).start()
    client = httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=60)
    try:
        yield client, behaviour, upstream
    finally:
        client.close()
        gateway.stop()
        upstream.stop()


def test_planner_traffic_takes_the_slots_chat_takes(one_slot_gateway: Any) -> None:
    client, behaviour, _ = one_slot_gateway
    answers: list[httpx.Response] = []
    chat = threading.Thread(target=lambda: answers.append(client.post("/v1/chat/completions", json=CHAT)))
    chat.start()
    deadline = time.monotonic() + 20
    while not behaviour.received:  # the chat request holds the only slot
        assert time.monotonic() < deadline
        time.sleep(0.01)
    refused = client.post("/v1/plans", json={"request": REQUEST})
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1", refused.text
    chat.join(timeout=30)
    assert answers and answers[0].status_code == 200
    behaviour.delay_s = 0
    assert client.post("/v1/plans", json={"request": REQUEST}).status_code == 200  # the slot is free again
    assert len(behaviour.received) == 2  # the refused plan never reached the engine


def test_planner_engine_failures_show_in_the_upstream_metrics(one_slot_gateway: Any) -> None:
    client, _, upstream = one_slot_gateway
    upstream.stop()
    assert client.post("/v1/plans", json={"request": REQUEST}).status_code == 503
    assert client.post("/v1/chat/completions", json=CHAT).status_code == 503
    metrics = client.get("/metrics").text
    assert 'planstack_upstream_failures_total{reason="unavailable"} 2.0' in metrics


@pytest.mark.parametrize(("wait_s", "replanned"), [(10.0, True), (0.0, False)])
def test_a_runs_replanning_waits_a_bounded_time_for_a_slot(tmp_path: Path, wait_s: float, replanned: bool) -> None:
    """A node fails for good while the tenant's one slot is busy: the re-planner waits for it (up to
    `gateway.replan_slot_wait_s`) and reaches the engine once it is free; with no wait the run fails
    with `replan_failed` and the engine never sees the re-plan."""
    behaviour = FakeBehaviour()
    upstream = ServerThread(create_fake_upstream(FAKE_MODEL, behaviour)).start()
    gateway = GatewaySettings(max_concurrent_upstream=2, max_concurrent_upstream_per_tenant=1, replan_slot_wait_s=wait_s)
    settings = gateway_settings(
        tmp_path, upstream.url, gateway=gateway, planner=PlannerConfig(max_retries=0), executors=ExecutorConfig(max_replans=1)
    )
    plan = plan_of({"id": "n1", "tool": "boom", "args": {"label": "fails for good"}})

    async def go() -> dict[str, Any]:
        async with build_stack(settings, engine_model=FAKE_MODEL, registry=fault_registry(tmp_path / "calls")) as stack:
            slots = stack.engine.slots
            await slots.acquire("alice")  # another request of alice's holds her only slot
            run_id = await stack.run_service().start("alice", REQUEST, plan)
            await asyncio.sleep(0.5)
            assert not behaviour.received  # the re-plan waits (or has already given up)
            slots.release("alice")
            view = await stack.run_service().wait("alice", run_id)
            return {"replans": view.replans, "error": view.error}

    try:
        outcome = asyncio.run(go())
    finally:
        upstream.stop()
    if replanned:
        assert behaviour.received and outcome["replans"] == 1, outcome
    else:
        assert not behaviour.received and outcome["error"]["type"] == "replan_failed", outcome
        assert "too many requests" in outcome["error"]["error"]

"""The deployed router config (configs/deploy/router.yaml) with a real vllm-router and a real gateway
in front of two FAKE engines (tests/fakes): placement by tenant, failover, health. The same with two
real vLLM engines is tests/deploy/test_deploy_multi_engine.py."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from planner.config import PlannerConfig
from serving.routing import affinity_key
from tests.conftest import FAKE_MODEL
from tests.deploy.conftest import TENANTS, RoutedGateway
from tests.deploy.router import RouterProcess
from tests.fakes.upstream import FakeBehaviour, ServerThread, create_fake_upstream

pytestmark = [pytest.mark.fake_upstream, pytest.mark.multi_engine]

CHAT = "/v1/chat/completions"
HEADER = "x-session-id"


@dataclass
class FakeEngines:
    servers: list[ServerThread]
    behaviours: list[FakeBehaviour]

    @property
    def urls(self) -> list[str]:
        return [server.url for server in self.servers]

    def counts(self) -> list[int]:
        return [len(behaviour.received) for behaviour in self.behaviours]


@pytest.fixture
def fake_engines() -> Iterator[FakeEngines]:
    behaviours = [FakeBehaviour(), FakeBehaviour()]
    servers = [ServerThread(create_fake_upstream(FAKE_MODEL, behaviour)).start() for behaviour in behaviours]
    yield FakeEngines(servers, behaviours)
    for server in servers:
        server.stop()


def chat(gateway: RoutedGateway, tenant: str, **extra: object) -> httpx.Response:
    body = {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, **extra}
    with gateway.client(tenant) as client:
        return client.post(CHAT, json=body)


def engine_of(engines: FakeEngines, before: list[int]) -> int:
    """Index of the one engine that received requests since `before` (asserts there is exactly one)."""
    grown = [i for i, (now, then) in enumerate(zip(engines.counts(), before, strict=True)) if now > then]
    assert len(grown) == 1, f"requests of one tenant reached engines {grown}"
    return grown[0]


def wait_for(predicate: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return predicate()


def test_each_tenant_sticks_to_one_engine_and_tenants_spread(
    fake_engines: FakeEngines, routed_gateway_factory: Callable[..., RoutedGateway]
) -> None:
    gateway = routed_gateway_factory(fake_engines.urls, FAKE_MODEL, None)
    placement: dict[str, int] = {}
    for tenant in TENANTS:
        before = fake_engines.counts()
        for _ in range(2):
            assert chat(gateway, tenant).status_code == 200
        with gateway.client(tenant) as client:
            body = {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
            with client.stream("POST", CHAT, json=body) as response:
                assert response.status_code == 200
                events = [line for line in response.iter_lines() if line.startswith("data: ")]
        assert events[-1] == "data: [DONE]" and len(events) > 2  # relayed through the router as a stream
        placement[tenant] = engine_of(fake_engines, before)
        assert fake_engines.counts()[placement[tenant]] - before[placement[tenant]] == 3
    assert set(placement.values()) == {0, 1}, "24 tenants should not all hash to one engine"

    # What the engines saw: the hash of the salt, never the salt; one value per tenant.
    seen: dict[str, set[str]] = {}
    for behaviour in fake_engines.behaviours:
        for body, headers in zip(behaviour.received, behaviour.received_headers, strict=True):
            assert headers[HEADER] == affinity_key(body["cache_salt"]) != body["cache_salt"]
            seen.setdefault(body["cache_salt"], set()).add(headers[HEADER])
    assert len(seen) == len(TENANTS) and all(len(values) == 1 for values in seen.values())


def test_a_stopped_engine_moves_its_tenants_to_the_other_without_errors(
    fake_engines: FakeEngines, routed_gateway_factory: Callable[..., RoutedGateway]
) -> None:
    gateway = routed_gateway_factory(fake_engines.urls, FAKE_MODEL, None)
    before = fake_engines.counts()
    assert chat(gateway, TENANTS[0]).status_code == 200
    home = engine_of(fake_engines, before)
    fake_engines.servers[home].stop()

    before = fake_engines.counts()
    statuses = [chat(gateway, TENANTS[0]).status_code for _ in range(5)]
    assert statuses == [200] * 5
    assert fake_engines.counts()[1 - home] - before[1 - home] == 5
    with gateway.client(TENANTS[0]) as client:
        assert client.get("/health").status_code == 200  # the router is ready while one engine is


def test_gateway_health_follows_router_readiness(
    fake_engines: FakeEngines, routed_gateway_factory: Callable[..., RoutedGateway]
) -> None:
    # Health checks every second instead of 5 s: this test is about which path the gateway probes.
    gateway = routed_gateway_factory(fake_engines.urls, FAKE_MODEL, None, router={"health_check_interval_secs": 1})
    router_health = gateway.router.url + "/health"
    fake_engines.servers[0].stop()
    # vllm-router's own /health turns 503 as soon as ANY engine is out; the gateway probes /readiness.
    assert wait_for(lambda: httpx.get(router_health).status_code == 503)
    assert httpx.get(gateway.url + "/health").status_code == 200
    fake_engines.servers[1].stop()
    assert wait_for(lambda: httpx.get(gateway.url + "/health").status_code == 503)
    assert httpx.get(gateway.url + "/health").json()["engine"] == "unavailable"


def test_planner_traffic_carries_the_affinity_header(
    fake_engines: FakeEngines, routed_gateway_factory: Callable[..., RoutedGateway]
) -> None:
    plan = {"steps": [{"tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}}]}
    for behaviour in fake_engines.behaviours:
        behaviour.reply = json.dumps(plan)
    gateway = routed_gateway_factory(
        fake_engines.urls, FAKE_MODEL, None, planner=PlannerConfig(strategy="one_shot")
    )
    with gateway.client(TENANTS[1]) as client:
        response = client.post("/v1/plans", json={"request": "weather in Hangzhou on 2027-06-20"})
    assert response.status_code == 200, response.text
    planner_calls = [
        (body, headers)
        for behaviour in fake_engines.behaviours
        for body, headers in zip(behaviour.received, behaviour.received_headers, strict=True)
    ]
    assert planner_calls, "the planner did not call the engine"
    assert {headers[HEADER] for _, headers in planner_calls} == {affinity_key(planner_calls[0][0]["cache_salt"])}


def test_two_router_replicas_place_every_tenant_on_the_same_engine(fake_engines: FakeEngines, tmp_path: Path) -> None:
    """Kubernetes runs two router replicas: the ring depends on the worker URLs only (not their order)."""
    keys = [affinity_key(f"salt-{i}") for i in range(16)]
    placements = []
    for urls in (fake_engines.urls, list(reversed(fake_engines.urls))):
        router = RouterProcess(urls, tmp_path / "router.log").start()
        try:
            placement = []
            for key in keys:
                before = fake_engines.counts()
                body = {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "hi"}]}
                assert httpx.post(f"{router.url}{CHAT}", json=body, headers={HEADER: key}).status_code == 200
                placement.append(engine_of(fake_engines, before))
        finally:
            router.stop()
        placements.append(placement)
    assert placements[0] == placements[1] and set(placements[0]) == {0, 1}

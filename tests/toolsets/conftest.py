"""Real services and a real gateway for the toolset tests, all on loopback and started by the test session:

- the example MCP server (`python -m examples.mcp_server`, official SDK, streamable HTTP) and the
  example billing service wrapped with fault controls (tests/toolsets/billing_plus.py), as processes
  (tests/sources/conftest.py `ServiceProcess`);
- a gateway (uvicorn thread) in front of the FAKE upstream (runs execute given plans; planning
  requests get the fake's replies), whose egress policy allows the loopback services (the operator's
  explicit CIDR), with short timings. `ToolsetGateway.restart()` stops it and starts a new one on the
  same home folder and run store (a gateway restart).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from pydantic import SecretStr

from executors.sources.egress import Resolver
from serving.app import create_app
from serving.settings import Settings
from serving.stack import build_stack
from tests.conftest import FAKE_MODEL, GatewayClient, RunningGateway, gateway_settings
from tests.fakes.upstream import FakeBehaviour, ServerThread, create_fake_upstream
from tests.sources.conftest import ServiceProcess, mcp_server, odd_service, service_factory  # noqa: F401 - shared fixtures

SECRET = "toolsets-test-secret-0123456789abcdef"
LOOPBACK = {"cidrs": ["127.0.0.0/8"], "ports": ["1024-65535"], "schemes": ["http"]}
FAST: dict[str, Any] = {
    "runs": {"lease_ttl_s": 2.0, "heartbeat_s": 0.3, "takeover_interval_s": 0.2, "follow_poll_s": 0.1},
    "executors": {"max_replans": 0, "backoff_base_s": 0.05, "backoff_max_s": 0.2},
    "approvals": {"expiry_sweep_s": 0.2},
    "tools": {"egress": LOOPBACK, "connect_timeout_s": 20.0},
}


@dataclass
class ToolsetGateway(GatewayClient):
    tmp_path: Path
    overrides: dict[str, Any]
    resolver: Resolver | None = None
    behaviour: FakeBehaviour = field(default_factory=FakeBehaviour)
    upstream: ServerThread | None = None
    server: ServerThread | None = None
    settings: Settings | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    def start(self) -> ToolsetGateway:
        if self.upstream is None:
            self.upstream = ServerThread(create_fake_upstream(FAKE_MODEL, self.behaviour)).start()
        values = _merged(FAST, self.overrides) | {"secret": SecretStr(SECRET)}
        self.settings = gateway_settings(self.tmp_path, self.upstream.url, **values)
        stack = build_stack(self.settings, engine_model=FAKE_MODEL, resolver=self.resolver)
        self.server = ServerThread(create_app(stack)).start()
        return self

    def restart(self) -> None:
        assert self.server is not None
        self.server.stop()
        self.server = None
        self.start()

    def stop(self) -> None:
        for server in (self.server, self.upstream):
            if server is not None:
                server.stop()

    client_timeout_s: ClassVar[float] = 60

    @property
    def store_file(self) -> Path:
        return self.tmp_path / "runs.sqlite3"


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = {**merged[key], **value} if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


@pytest.fixture
def gateway_factory(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., ToolsetGateway]]:
    """Gateways in front of the fake upstream. They stop before the test's services (`service_factory` is
    set up first, so torn down last): a gateway holds its MCP sessions' streams open, and a service
    stopped first would wait for them until its stop timed out."""
    request.getfixturevalue("service_factory")
    made: list[ToolsetGateway] = []

    def make(resolver: Resolver | None = None, **overrides: Any) -> ToolsetGateway:
        gateway = ToolsetGateway(tmp_path / f"gw{len(made)}", overrides, resolver).start()
        made.append(gateway)
        return gateway

    yield make
    for gateway in made:
        gateway.stop()


@pytest.fixture
def gateway(gateway_factory: Callable[..., ToolsetGateway]) -> ToolsetGateway:
    made: ToolsetGateway = gateway_factory()
    return made


@pytest.fixture
def gateway_factory_engine(
    engine_url: str, engine_key: str | None, engine_model: str, prepared_model_dir: Path, tmp_path: Path
) -> Iterator[Callable[..., RunningGateway]]:
    """Real gateways in front of the REAL engine (marker engine), with settings overrides."""
    servers: list[ServerThread] = []

    def make(**overrides: Any) -> RunningGateway:
        settings = gateway_settings(tmp_path / f"engine-gw{len(servers)}", engine_url, engine_key, **overrides)
        app = create_app(settings, engine_model=engine_model, model_dir=prepared_model_dir)
        server = ServerThread(app).start()
        servers.append(server)
        return RunningGateway(server.url, settings, server)

    yield make
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def billing_plus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """The billing service with fault controls (one per test module: tests compare its counters)."""
    service = ServiceProcess("tests.toolsets.billing_plus", tmp_path_factory.mktemp("billing")).start()
    yield service
    service.stop()


def billing_document(service: ServiceProcess) -> str:
    return httpx.get(f"{service.url}/openapi.json", timeout=10).text


def billing_stats(service: ServiceProcess) -> dict[str, int]:
    stats: dict[str, int] = httpx.get(f"{service.url}/stats", timeout=10).json()
    return stats


def register(client: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/v1/toolsets", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def sse_events(client: httpx.Client, run_id: str, *, until: str = "run_finished", after: int = 0) -> list[dict[str, Any]]:
    """The run's events as they stream, up to (and including) the first of type `until`."""
    events: list[dict[str, Any]] = []
    headers = {"Last-Event-ID": str(after)} if after else {}
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as stream:
        kind = ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind not in ("done", "error"):
                events.append(json.loads(line[6:]))
                if kind == until:
                    return events
    return events

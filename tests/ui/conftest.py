"""A real gateway for the steering and web-UI tests: uvicorn on a loopback port, in front of the FAKE
upstream (no engine: every run here executes a plan given in the request), over the demo tools plus
test tools (tests/ui/helpers.py), with short timings. `SteeringStack.restart()` stops the gateway
and starts a new one on the same home folder and run store (a gateway restart)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import SecretStr

from serving.app import create_app
from serving.settings import Settings
from serving.stack import build_stack
from tests.conftest import FAKE_MODEL, GatewayClient, gateway_settings
from tests.fakes.upstream import FakeBehaviour, ServerThread, create_fake_upstream
from tests.ui.helpers import ToolCalls, steering_registry

SECRET = "ui-test-secret-0123456789abcdef"
METRICS_TOKEN = "ui-test-metrics-token-0000"
FAST: dict[str, Any] = {
    "gateway": {"metrics_token": METRICS_TOKEN},  # /metrics behind a token: its series then name tenants
    "runs": {"lease_ttl_s": 2.0, "heartbeat_s": 0.3, "takeover_interval_s": 0.2, "follow_poll_s": 0.1},
    "executors": {"max_replans": 0, "backoff_base_s": 0.05, "backoff_max_s": 0.1},
    "webhooks": {"allowed_hosts": ["127.0.0.1"], "backoff_base_s": 0.05, "backoff_max_s": 0.2, "timeout_s": 2.0},
    "approvals": {"expiry_sweep_s": 0.2},
    "planner": {"max_nodes": 10},
}


@dataclass
class SteeringStack(GatewayClient):
    tmp_path: Path
    overrides: dict[str, Any]
    calls: ToolCalls = field(default_factory=ToolCalls)
    upstream: ServerThread | None = None
    gateway: ServerThread | None = None
    settings: Settings | None = None

    @property
    def url(self) -> str:
        assert self.gateway is not None
        return self.gateway.url

    def start(self) -> SteeringStack:
        if self.upstream is None:
            self.upstream = ServerThread(create_fake_upstream(FAKE_MODEL, FakeBehaviour())).start()
        values = {**FAST, **self.overrides, "secret": SecretStr(SECRET)}
        self.settings = gateway_settings(self.tmp_path, self.upstream.url, **values)
        stack = build_stack(self.settings, engine_model=FAKE_MODEL, registry=steering_registry(self.calls))
        self.gateway = ServerThread(create_app(stack)).start()
        return self

    def restart(self) -> None:
        assert self.gateway is not None
        self.gateway.stop()
        self.start()

    def stop(self) -> None:
        for server in (self.gateway, self.upstream):
            if server is not None:
                server.stop()

    client_timeout_s: ClassVar[float] = 30


@pytest.fixture
def stack_factory(tmp_path: Path) -> Iterator[Any]:
    made: list[SteeringStack] = []

    def make(**overrides: Any) -> SteeringStack:
        stack = SteeringStack(tmp_path / f"gw{len(made)}", overrides).start()
        made.append(stack)
        return stack

    yield make
    for stack in made:
        stack.stop()


@pytest.fixture
def stack(stack_factory: Any) -> SteeringStack:
    made: SteeringStack = stack_factory()
    return made

"""Fixtures for the deployment tests: a real gateway in front of vllm-router in front of N engines."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from serving.app import create_app
from serving.settings import EngineSettings, Settings
from tests.deploy.router import RouterProcess
from tests.fakes.upstream import ServerThread

TENANTS = [f"tenant{i:02d}" for i in range(24)]
SECRET = "deploy-test-secret-0123456789abcdef"


def key_of(tenant: str) -> str:
    return f"key-{tenant}-000"


@dataclass
class RoutedGateway:
    """A gateway whose engine is the router."""

    url: str
    router: RouterProcess
    server: ServerThread

    def client(self, tenant: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key_of(tenant)}"}, timeout=180)


@pytest.fixture
def routed_gateway_factory(tmp_path: Path) -> Iterator[Callable[..., RoutedGateway]]:
    """`make(worker_urls, engine_model, model_dir, router={flag: value}, engine_key=..., **settings)`: router +
    gateway (`engine_key`: the key the engines behind the router require)."""
    started: list[tuple[RouterProcess, ServerThread]] = []

    def make(
        worker_urls: list[str],
        engine_model: str,
        model_dir: Path | None,
        router: dict[str, object] | None = None,
        engine_key: str | None = None,
        **overrides: Any,
    ) -> RoutedGateway:
        process = RouterProcess(worker_urls, tmp_path / "router.log", **(router or {})).start()
        engine = EngineSettings(
            host="127.0.0.1",
            port=process.port,
            health_path="/readiness",
            request_timeout_s=120,
            api_key=SecretStr(engine_key) if engine_key else None,
        )
        values: dict[str, Any] = {
            "home": tmp_path / "gateway",
            "api_keys": SecretStr(",".join(f"{key_of(t)}={t}" for t in TENANTS)),
            "secret": SecretStr(SECRET),
            "engine": engine,
            **overrides,
        }
        server = ServerThread(create_app(Settings(**values), engine_model=engine_model, model_dir=model_dir)).start()
        started.append((process, server))
        return RoutedGateway(server.url, process, server)

    yield make
    for router, server in started:
        server.stop()
        router.stop()

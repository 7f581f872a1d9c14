"""Shared fixtures.

- `engine_url` / `engine_model` / `prepared_model_dir` (session): the REAL vLLM engine with the
  embedded default model, started once per test session by the same `EngineProcess` that
  `planstack serve` uses, and stopped (with a check that nothing is left behind) at the end. Set
  `PLANSTACK_TEST_ENGINE_URL=http://127.0.0.1:8001` to use an engine that is already running.
- `engine_key` (session): the key that engine requires (`engine_headers` for direct requests;
  gateways get it through their settings). An engine this session starts gets a fresh key; for
  `PLANSTACK_TEST_ENGINE_URL` it is `PLANSTACK_TEST_ENGINE_KEY`, else the home's engine-key file if
  there is one (an engine started without a key ignores it).
- `session_engine` (session): that engine's process (None for an engine already running).
- `spare_engine` (session): a second real engine, started on first use, that tests may kill.
- `gateway_factory`: real gateways (uvicorn on loopback ports) in front of that engine.
- `fake_gateway`: a real gateway in front of the FAKE upstream in tests/fakes (marker fake_upstream).
- `postgres_server` / `postgres_url` (tests/postgres.py): a REAL PostgreSQL started for the session.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlparse

import httpx
import pytest
from pydantic import SecretStr

from serving.app import create_app
from serving.engine.model_prep import prepare_model
from serving.engine.process import ENGINE_KEY_FILE, EngineProcess, pid_alive, port_in_use
from serving.engine.profiles import EngineProfile, load_profile
from serving.private_files import read_private_file
from serving.settings import EngineSettings, Settings, load_settings
from tests.fakes.upstream import FakeBehaviour, ServerThread, create_fake_upstream, free_port

pytest_plugins = ["tests.postgres"]

API_KEYS = (
    "key-tenant-a-000=tenantA,key-tenant-b-000=tenantB,"
    "key-approver-a-000=tenantA:approver,key-approver-b-000=tenantB:approver"
)
KEY_A = "key-tenant-a-000"
KEY_B = "key-tenant-b-000"
KEY_A_APPROVER = "key-approver-a-000"  # tenant A's people: may approve or reject held runs
KEY_B_APPROVER = "key-approver-b-000"
FAKE_MODEL = "fake-model"


@pytest.fixture(scope="session")
def engine_model() -> str:
    settings = load_settings()
    return load_profile(settings.engine.profile).served_model_name


@pytest.fixture(scope="session")
def prepared_model_dir() -> Path:
    settings = load_settings()
    return prepare_model(load_profile(settings.engine.profile), settings).path


@pytest.fixture(scope="session")
def engine_key() -> str | None:
    if os.environ.get("PLANSTACK_TEST_ENGINE_URL"):
        given = os.environ.get("PLANSTACK_TEST_ENGINE_KEY")
        return given or read_private_file(load_settings().home / ENGINE_KEY_FILE, "engine API key")
    return secrets.token_urlsafe(24)


@pytest.fixture(scope="session")
def engine_headers(engine_key: str | None) -> dict[str, str]:
    """Headers of a request sent straight to the test engine (not through a gateway)."""
    return {"Authorization": f"Bearer {engine_key}"} if engine_key else {}


@pytest.fixture(scope="session")
def session_engine(prepared_model_dir: Path, engine_key: str | None) -> Iterator[EngineProcess | None]:
    """The engine this session started (None for `PLANSTACK_TEST_ENGINE_URL`: its process is not ours)."""
    if os.environ.get("PLANSTACK_TEST_ENGINE_URL"):
        yield None
        return
    settings = load_settings()
    settings.engine.port = free_port()
    settings.engine.api_key = SecretStr(engine_key) if engine_key else None
    engine = EngineProcess(settings, load_profile(settings.engine.profile), prepared_model_dir)
    engine.start()
    pid = engine._proc.pid if engine._proc is not None else -1
    try:
        engine.wait_healthy(settings.engine.startup_timeout_s)
        yield engine
    finally:
        engine.stop()
    # Stopping must leave nothing behind: no process, no listening port.
    assert not pid_alive(pid), "the engine process outlived stop()"
    assert not port_in_use(settings.engine.host, settings.engine.port), "the engine port is still open"


@pytest.fixture(scope="session")
def engine_url(session_engine: EngineProcess | None) -> str:
    external = os.environ.get("PLANSTACK_TEST_ENGINE_URL")
    if session_engine is not None:
        return session_engine.base_url
    assert external and httpx.get(f"{external}/health", timeout=5).status_code == 200, f"no engine at {external}"
    return external.rstrip("/")


class SpareEngine:
    """A second real engine beside the session's, for the tests that kill one (engine loss and restart,
    routing failover): started on first use, with the session's key, on one port for the whole session;
    `running()` starts it again when an earlier test killed it. One spare serves all those tests, so the
    session starts it once plus once per kill instead of once or twice per test."""

    def __init__(self, model_dir: Path, engine_key: str | None) -> None:
        self.settings = load_settings()
        self.settings.engine.port = free_port()
        self.settings.engine.api_key = SecretStr(engine_key) if engine_key else None
        self.profile = extra_engine_profile(self.settings.engine.profile)
        self.model_dir = model_dir
        self.engine: EngineProcess | None = None
        self.starts = 0

    def running(self) -> EngineProcess:
        """The spare, healthy: started (again) when it is not running."""
        engine = self.engine
        alive = engine is not None and engine._proc is not None and engine._proc.poll() is None
        if engine is not None and alive and self._healthy(engine):
            return engine
        if engine is not None:
            engine.stop()  # reaps what a kill left behind
        self.engine = EngineProcess(self.settings, self.profile, self.model_dir)
        self.engine.start()
        self.starts += 1
        self.engine.wait_healthy(self.settings.engine.startup_timeout_s)
        return self.engine

    @staticmethod
    def _healthy(engine: EngineProcess) -> bool:
        try:
            return httpx.get(f"{engine.base_url}/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self.engine is not None:
            self.engine.stop()


@pytest.fixture(scope="session")
def spare_engine(prepared_model_dir: Path, engine_key: str | None) -> Iterator[SpareEngine]:
    spare = SpareEngine(prepared_model_dir, engine_key)
    try:
        yield spare
    finally:
        spare.stop()


def extra_engine_profile(name: str) -> EngineProfile:
    """The profile of an engine a test starts beside the session's (the spare: kills, restarts, routing).

    On CPU it runs eagerly (`--enforce-eager`, no torch.compile): vLLM 0.32 on CPU saves an ahead-of-time
    compiled model but cannot load it back ("'function' object has no attribute 'finalize_loading'"), so a
    compiled start takes 80-130 s here and an eager one about 40 s, at about two thirds of the decoding
    speed. These engines check processes and routing, not decoding speed; the session's engine keeps the
    product's settings."""
    profile = load_profile(name)
    if profile.device != "cpu":
        return profile
    return profile.model_copy(update={"args": [*profile.args, "--enforce-eager"]})


def gateway_settings(home: Path, engine_base_url: str, engine_key: str | None = None, **overrides: Any) -> Settings:
    parsed = urlparse(engine_base_url)
    engine = EngineSettings(
        host=parsed.hostname or "127.0.0.1",
        port=parsed.port or 80,
        request_timeout_s=120,
        api_key=SecretStr(engine_key) if engine_key else None,
    )
    values: dict[str, Any] = {"home": home, "api_keys": SecretStr(API_KEYS), "engine": engine}
    values.update(overrides)
    return Settings(**values)


class GatewayClient:
    """An HTTP client of a gateway a test started at `url`, and a wait for a run's status."""

    url: str
    client_timeout_s: ClassVar[float] = 30

    def client(self, key: str = KEY_A) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=self.client_timeout_s
        )

    def wait_status(
        self, run_id: str, *statuses: str, key: str = KEY_A, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """The run's view once its status is one of `statuses`, or as it is after `timeout_s`."""
        deadline = time.monotonic() + (self.client_timeout_s if timeout_s is None else timeout_s)
        with self.client(key) as client:
            while True:
                view: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
                if view.get("status") in statuses or time.monotonic() > deadline:
                    return view
                time.sleep(0.05)


@dataclass
class RunningGateway(GatewayClient):
    url: str
    settings: Settings
    server: ServerThread
    client_timeout_s: ClassVar[float] = 180


@pytest.fixture
def gateway_factory(
    engine_url: str, engine_key: str | None, engine_model: str, prepared_model_dir: Path, tmp_path: Path
) -> Iterator[Callable[..., RunningGateway]]:
    servers: list[ServerThread] = []

    def make(**overrides: Any) -> RunningGateway:
        settings = gateway_settings(tmp_path, engine_url, engine_key, **overrides)
        app = create_app(settings, engine_model=engine_model, model_dir=prepared_model_dir)
        server = ServerThread(app).start()
        servers.append(server)
        return RunningGateway(server.url, settings, server)

    yield make
    for server in servers:
        server.stop()


@dataclass
class FakeStack:
    gateway: RunningGateway
    upstream: ServerThread
    behaviour: FakeBehaviour


@pytest.fixture
def fake_stack_factory(tmp_path: Path) -> Iterator[Callable[..., FakeStack]]:
    started: list[ServerThread] = []

    def make(**overrides: Any) -> FakeStack:
        behaviour = FakeBehaviour()
        upstream = ServerThread(create_fake_upstream(FAKE_MODEL, behaviour)).start()
        settings = gateway_settings(tmp_path, upstream.url, **overrides)
        app = create_app(settings, engine_model=FAKE_MODEL, model_dir=None)
        gateway = ServerThread(app).start()
        started.extend([gateway, upstream])
        return FakeStack(RunningGateway(gateway.url, settings, gateway), upstream, behaviour)

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def fake_stack(fake_stack_factory: Callable[..., FakeStack]) -> FakeStack:
    return fake_stack_factory()

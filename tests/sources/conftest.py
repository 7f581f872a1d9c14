"""Real services for the tool-source tests, started by the test session on loopback ports.

- `ServiceProcess`: `python -m examples.mcp_server` / `python -m examples.openapi_service` as a
  subprocess on a free port, ready once its /health answers; can be killed and started again on the
  same port (a server restart). Every process is stopped at the end of its fixture.
- `odd_service` (tests/sources/odd_service.py): an HTTP service that misbehaves on purpose (redirects,
  oversized and slow answers, errors) in a uvicorn thread.
- `loopback_policy`: an egress policy that allows the loopback services (the operator's explicit CIDR).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from executors.sources.egress import EgressPolicy
from tests.fakes.upstream import ServerThread, free_port
from tests.sources.odd_service import OddService, create_odd_service

ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 90.0  # a cold `import mcp` on a loaded two-core machine takes seconds


class ServiceProcess:
    """One example service as a subprocess on a fixed loopback port."""

    def __init__(self, module: str, log_dir: Path, *extra: str) -> None:
        self.module = module
        self.port = free_port()
        self.extra = extra
        self.log = log_dir / f"{module.rsplit('.', 1)[-1]}-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServiceProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", self.module, "--host", "127.0.0.1", "--port", str(self.port), *self.extra]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.module} exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)  # polling the health endpoint, not a guess at readiness
        raise RuntimeError(f"{self.module} did not become healthy in {STARTUP_S:g} s")

    def kill(self) -> None:
        """SIGKILL, as a crash: no shutdown, sessions lost."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None


@pytest.fixture
def service_factory(tmp_path: Path) -> Iterator[Callable[..., ServiceProcess]]:
    started: list[ServiceProcess] = []

    def make(module: str, *extra: str) -> ServiceProcess:
        service = ServiceProcess(module, tmp_path, *extra)
        started.append(service)
        return service.start()

    yield make
    for service in started:
        service.stop()


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """One example MCP server for the tests that do not change its state."""
    service = ServiceProcess("examples.mcp_server", tmp_path_factory.mktemp("mcp")).start()
    yield service
    service.stop()


@pytest.fixture(scope="module")
def billing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """The example billing service (tests compare its counters before and after)."""
    service = ServiceProcess("examples.openapi_service", tmp_path_factory.mktemp("billing")).start()
    yield service
    service.stop()


@pytest.fixture
def odd_service() -> Iterator[OddService]:
    service = OddService()
    server = ServerThread(create_odd_service(service)).start()
    service.url = server.url
    yield service
    service.release_all(server.url)
    server.stop()


@pytest.fixture
def loopback_policy() -> EgressPolicy:
    return EgressPolicy(cidrs=("127.0.0.0/8",), ports=("1024-65535",), schemes=("http",))

"""vllm-router as a child process, with the flags of configs/deploy/router.yaml (the deployed config)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.fakes.upstream import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
ROUTER_CONFIG = REPO_ROOT / "configs" / "deploy" / "router.yaml"


def router_flags(path: Path = ROUTER_CONFIG) -> list[str]:
    """`--key=value` for every entry of the router config file."""
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return [f"--{key}={value}" for key, value in data.items()]


class RouterProcess:
    """Start vllm-router on a free loopback port in front of `worker_urls`; stop it cleanly."""

    def __init__(self, worker_urls: list[str], log_file: Path, **overrides: object) -> None:
        self.worker_urls = worker_urls
        self.log_file = log_file
        self.port = free_port()
        self.metrics_port = free_port()
        self.overrides = {key.replace("_", "-"): value for key, value in overrides.items()}
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        flags = [flag for flag in router_flags() if flag.split("=", 1)[0][2:] not in self.overrides]
        flags += [f"--{key}={value}" for key, value in self.overrides.items()]
        executable = Path(sys.executable).with_name("vllm-router")
        return [
            str(executable), "--host=127.0.0.1", f"--port={self.port}",
            "--prometheus-host=127.0.0.1", f"--prometheus-port={self.metrics_port}",
            "--worker-urls", *self.worker_urls, *flags,
        ]  # fmt: skip

    def start(self, timeout_s: float = 60.0) -> RouterProcess:
        """Launch it and wait until it answers (it listens only once every worker is healthy)."""
        with self.log_file.open("ab") as log:
            self._proc = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"vllm-router exited with {self._proc.returncode}; see {self.log_file}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/liveness", timeout=1.0).status_code == 200:
                    return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"vllm-router did not answer within {timeout_s:.0f} s; see {self.log_file}")

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)
        self._proc = None

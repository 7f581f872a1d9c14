"""The vLLM engine as a managed child process.

`EngineProcess` builds the vLLM OpenAI-server command from a profile, refuses a busy port, starts the
server in its own process group with its output streamed to a log file, waits for `/health` with a
timeout (failing early, with the log's tail, if the process dies), and stops the whole group cleanly
(SIGTERM, then SIGKILL). An attached engine (`planstack serve`) also gets PR_SET_PDEATHSIG so that it
cannot outlive a gateway that was killed hard; a detached one (`planstack engine start`) is tracked
by a state file so that `engine stop|status` find it later.

The engine is not a side door around the gateway: it starts with an API key only the gateway knows
(`engine_api_key`: `engine.api_key`, else a random key in <home>/engine-key, mode 0600), passed in
its environment (`VLLM_API_KEY`, not on the command line where `ps` shows it), and with
`serving.engine.auth_middleware` loaded so that every route but `GET /health` needs it, not only
the `/v1` ones vLLM's own check covers.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from serving.engine.auth_middleware import KEY_ENV, EngineKeyMiddleware
from serving.engine.profiles import EngineProfile
from serving.errors import ConfigError, EngineUnavailableError
from serving.private_files import load_or_create_private, read_private_file
from serving.settings import REPO_ROOT, Settings

_PR_SET_PDEATHSIG = 1
ENGINE_KEY_FILE = "engine-key"
KEY_MIDDLEWARE = f"{EngineKeyMiddleware.__module__}.{EngineKeyMiddleware.__qualname__}"


def engine_api_key(settings: Settings) -> str:
    """The key the engine requires and the gateway sends: `engine.api_key`, else the one in
    <home>/engine-key, created once (mode 0600, refused if open to others or empty)."""
    if settings.engine.api_key is not None:
        return settings.engine.api_key.get_secret_value()
    return load_or_create_private(
        settings.home / ENGINE_KEY_FILE, lambda: secrets.token_urlsafe(32), "engine API key"
    )


def existing_engine_key(settings: Settings) -> str | None:
    """For tools that talk to an engine started elsewhere (benchmarks): the configured key, else the
    home's engine-key file if there is one; never creates it. An engine without a key ignores it."""
    if settings.engine.api_key is not None:
        return settings.engine.api_key.get_secret_value()
    return read_private_file(settings.home / ENGINE_KEY_FILE, "engine API key")


def engine_headers(key: str | None) -> dict[str, str]:
    """Headers of a request sent straight to the engine."""
    return {"Authorization": f"Bearer {key}"} if key else {}


@dataclass(frozen=True)
class EngineState:
    """What a started engine leaves in <home>/run/engine-<port>.json."""

    pid: int
    host: str
    port: int
    model: str
    profile: str
    log: str
    started_at: float


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def tail(path: Path, lines: int = 25) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 16_384))
            return "\n".join(handle.read().decode("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return ""


class EngineProcess:
    """Start, watch and stop one vLLM OpenAI server for a profile."""

    def __init__(self, settings: Settings, profile: EngineProfile, model_dir: Path) -> None:
        self.settings = settings
        self.profile = profile
        self.model_dir = model_dir
        self.host = settings.engine.host
        self.port = settings.engine.port
        self._proc: subprocess.Popen[bytes] | None = None

    # ---- paths -------------------------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.settings.run_dir / f"engine-{self.port}.json"

    @property
    def log_file(self) -> Path:
        return self.settings.log_dir / f"engine-{self.port}.log"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # ---- command -----------------------------------------------------------------------------
    def command(self) -> list[str]:
        profile, engine = self.profile, self.settings.engine
        cmd = [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(self.model_dir),
            "--served-model-name", profile.served_model_name,
            "--host", self.host,
            "--port", str(self.port),
            "--max-model-len", str(profile.max_model_len),
            "--dtype", profile.dtype,
            "--structured-outputs-config.backend", engine.structured_outputs_backend,
            "--middleware", KEY_MIDDLEWARE,
        ]  # fmt: skip
        if profile.device == "gpu":
            cmd += ["--tensor-parallel-size", str(profile.tensor_parallel_size)]
            if profile.gpu_memory_utilization is not None:
                cmd += ["--gpu-memory-utilization", str(profile.gpu_memory_utilization)]
        return cmd + list(profile.args) + list(engine.extra_args)

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "VLLM_CACHE_ROOT": str(self.settings.home / "vllm-cache"),
                "VLLM_REGEX_COMPILATION_TIMEOUT_S": str(self.settings.engine.grammar_compile_timeout_s),
                "VLLM_NO_USAGE_STATS": "1",
                "DO_NOT_TRACK": "1",
                KEY_ENV: engine_api_key(self.settings),
                # the key middleware is imported by the engine: from this checkout
                "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p),
            }
        )
        env.update(self.profile.env)
        return env

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self, *, detach: bool = False) -> None:
        """Launch the server; raises ConfigError when the port is taken."""
        if port_in_use(self.host, self.port):
            raise ConfigError(
                f"cannot start the engine: {self.host}:{self.port} is already in use",
                hint="another engine may be running (`planstack engine status`); stop it or set "
                "PLANSTACK_ENGINE__PORT",
            )
        self.settings.log_dir.mkdir(parents=True, exist_ok=True)
        self.settings.run_dir.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            log.write(f"\n=== planstack: starting {' '.join(self.command())}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                self.command(),
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=None if detach else _die_with_parent,  # noqa: PLW1509
            )
        state = EngineState(
            pid=self._proc.pid,
            host=self.host,
            port=self.port,
            model=self.profile.served_model_name,
            profile=self.profile.name,
            log=str(self.log_file),
            started_at=time.time(),
        )
        self.state_file.write_text(json.dumps(asdict(state)))

    def wait_healthy(self, timeout_s: float, on_wait: Callable[[float, str], None] | None = None) -> float:
        """Block until GET /health answers 200; returns seconds waited. Fails early if the process dies.

        `on_wait(elapsed, last log line)` is called about every 10 s while waiting.
        """
        started = time.monotonic()
        next_report = 10.0
        with httpx.Client(timeout=2.0) as client:
            while True:
                elapsed = time.monotonic() - started
                if self._proc is not None and self._proc.poll() is not None:
                    self.state_file.unlink(missing_ok=True)
                    raise EngineUnavailableError(
                        f"the engine exited with code {self._proc.returncode} during start-up; "
                        f"last lines of {self.log_file}:\n{tail(self.log_file)}"
                    )
                try:
                    if client.get(f"{self.base_url}/health").status_code == 200:
                        return elapsed
                except httpx.HTTPError:
                    pass
                if elapsed > timeout_s:
                    self.stop()
                    raise EngineUnavailableError(
                        f"the engine did not become healthy within {timeout_s:.0f} s; "
                        f"last lines of {self.log_file}:\n{tail(self.log_file)}",
                        hint="raise engine.startup_timeout_s if this machine is just slow",
                    )
                if on_wait is not None and elapsed >= next_report:
                    on_wait(elapsed, tail(self.log_file, 1))
                    next_report += 10.0
                time.sleep(1.0)

    def stop(self, timeout_s: float = 20.0) -> bool:
        """Stop the engine's whole process group; True when something was stopped."""
        pid = self._proc.pid if self._proc is not None else self._state_pid()
        if pid is None:
            return False
        stopped = _terminate_group(pid, timeout_s)
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=1.0)
        self.state_file.unlink(missing_ok=True)
        return stopped

    def _state_pid(self) -> int | None:
        state = read_state(self.state_file)
        return state.pid if state is not None else None


def read_state(path: Path) -> EngineState | None:
    try:
        return EngineState(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _terminate_group(pid: int, timeout_s: float) -> bool:
    """SIGTERM the process group led by pid, wait, then SIGKILL what is left."""
    if not pid_alive(pid):
        return False
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            # Reap it when it is our child; otherwise just watch for it to go away.
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                break
        except ChildProcessError:
            if not pid_alive(pid):
                break
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)  # whatever is left of the group (compile workers, etc.)
    return True

"""EngineProcess lifecycle with a stand-in child process (the real engine is covered by `engine` tests).

These tests claim only what the process manager does — refuse a busy port, notice an early exit,
stop a whole process group — so a small Python child stands in for vLLM here.
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

from serving.engine.process import EngineProcess, pid_alive, read_state
from serving.engine.profiles import load_profile
from serving.errors import ConfigError, EngineUnavailableError
from serving.settings import Settings
from tests.fakes.upstream import free_port


class StandInEngine(EngineProcess):
    def __init__(self, settings: Settings, script: str) -> None:
        super().__init__(settings, load_profile("smollm2-cpu"), Path("/nonexistent"))
        self._script = script

    def command(self) -> list[str]:
        return [sys.executable, "-c", self._script]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path, engine={"port": free_port()})


def test_vllm_command_carries_the_profile(settings: Settings) -> None:
    engine = EngineProcess(settings, load_profile("smollm2-cpu"), Path("/models/x"))
    cmd = engine.command()
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert cmd[cmd.index("--model") + 1] == "/models/x"
    assert cmd[cmd.index("--served-model-name") + 1] == "smollm2-135m-instruct"
    assert cmd[cmd.index("--structured-outputs-config.backend") + 1] == "outlines"
    assert "--enable-prefix-caching" in cmd and "--tensor-parallel-size" not in cmd
    env = engine.environment()
    assert env["HF_HUB_OFFLINE"] == "1" and env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert env["VLLM_REGEX_COMPILATION_TIMEOUT_S"] == "30"


def test_gpu_profile_adds_parallelism_flags(settings: Settings) -> None:
    cmd = EngineProcess(settings, load_profile("phi3-mini-gpu"), Path("/m")).command()
    assert cmd[cmd.index("--tensor-parallel-size") + 1] == "1"
    assert cmd[cmd.index("--gpu-memory-utilization") + 1] == "0.85"
    assert cmd[cmd.index("--max-model-len") + 1] == "4096"


def test_busy_port_is_refused_with_a_clear_error(settings: Settings) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", settings.engine.port))
        busy.listen()
        with pytest.raises(ConfigError, match="already in use"):
            StandInEngine(settings, "pass").start()


def test_an_engine_that_dies_during_start_up_is_reported_with_its_log(settings: Settings) -> None:
    engine = StandInEngine(settings, "import sys; print('boom: no weights'); sys.exit(3)")
    engine.start()
    with pytest.raises(EngineUnavailableError, match="exited with code 3") as caught:
        engine.wait_healthy(timeout_s=30)
    assert "boom: no weights" in caught.value.message
    assert not engine.state_file.exists()


def test_start_up_timeout_stops_the_process(settings: Settings) -> None:
    engine = StandInEngine(settings, "import time; time.sleep(60)")
    engine.start()
    pid = read_state(engine.state_file).pid  # type: ignore[union-attr]
    with pytest.raises(EngineUnavailableError, match="did not become healthy"):
        engine.wait_healthy(timeout_s=1)
    assert not pid_alive(pid)


def test_stop_ends_the_whole_process_group(settings: Settings, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time, pathlib;"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']);"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(p.pid));"
        "time.sleep(120)"
    )
    engine = StandInEngine(settings, script)
    engine.start()
    deadline = time.monotonic() + 20
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(pid_file.read_text())
    state = read_state(engine.state_file)
    assert state is not None and pid_alive(state.pid) and pid_alive(grandchild)
    # A second manager that only knows the state file (as `planstack engine stop` does) stops it all.
    assert StandInEngine(settings, "").stop()
    deadline = time.monotonic() + 10
    while pid_alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(state.pid) and not pid_alive(grandchild)
    assert not engine.state_file.exists()

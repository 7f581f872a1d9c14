"""The published development key never guards a public bind, and `/health` (which
needs no key) says nothing about auth."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import SecretStr

from serving.app import create_app
from serving.errors import ConfigError
from serving.settings import GatewaySettings, Settings
from tests.conftest import API_KEYS, FAKE_MODEL, FakeStack
from tests.fakes.upstream import free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3"])
def test_public_bind_without_real_keys_refuses_to_start(tmp_path: Path, host: str) -> None:
    settings = Settings(home=tmp_path, api_keys=None, gateway=GatewaySettings(host=host))
    with pytest.raises(ConfigError) as caught:
        create_app(settings, engine_model=FAKE_MODEL, model_dir=None)
    assert "development key" in caught.value.message and host in caught.value.message
    assert caught.value.hint is not None and "PLANSTACK_API_KEYS" in caught.value.hint


def test_loopback_or_real_keys_start(tmp_path: Path) -> None:
    create_app(Settings(home=tmp_path, api_keys=None), engine_model=FAKE_MODEL, model_dir=None)
    public_with_keys = Settings(home=tmp_path, api_keys=SecretStr(API_KEYS), gateway=GatewaySettings(host="0.0.0.0"))
    create_app(public_with_keys, engine_model=FAKE_MODEL, model_dir=None)  # builds; nothing is bound here


def test_serve_refuses_before_binding_or_starting_an_engine(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PLANSTACK_API_KEYS"}
    env.update(
        PYTHONPATH=str(REPO),
        PLANSTACK_HOME=str(tmp_path),
        PLANSTACK_GATEWAY__HOST="0.0.0.0",
        PLANSTACK_GATEWAY__PORT=str(port),
        PLANSTACK_ENGINE__PORT=str(free_port()),
    )
    done = subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "-m", "serving.cli", "serve", "--external-engine"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "PLANSTACK_API_KEYS" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "planstack gateway on" not in done.stdout


@pytest.mark.fake_upstream
def test_health_says_nothing_about_auth(fake_stack_factory: Callable[..., FakeStack]) -> None:
    for keys in (None, SecretStr(API_KEYS)):
        stack = fake_stack_factory(api_keys=keys)
        with stack.gateway.client() as client:
            response = client.get("/health", headers={"Authorization": ""})
        assert response.status_code == 200
        body = response.json()
        assert "auth" not in body, body
        assert not any(word in response.text.lower() for word in ("dev-key", "api-key", "api_key")), body

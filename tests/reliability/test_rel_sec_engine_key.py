"""The engine is not a side door around the gateway.

The engine starts with a key only the gateway knows (in its environment, not its argv) and with
`serving.engine.auth_middleware` loaded, because vLLM's own `--api-key` check covers only `/v1`,
`/v2`, `/inference` and `/cohere`: `/invocations` (the same inference), `/tokenize`, `/metrics` and
others stay open without it. The engine test checks the session's own engine, which the test session
starts with a fresh key as `planstack serve` does."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from serving.app import create_app
from serving.engine.auth_middleware import EngineKeyMiddleware
from serving.engine.process import KEY_MIDDLEWARE, EngineProcess, engine_api_key
from serving.engine.profiles import load_profile
from serving.settings import EngineSettings, Settings
from tests.conftest import KEY_A, gateway_settings
from tests.fakes.upstream import ServerThread, free_port

GUARDED = [  # (method, path, body): inference, tokenizer, metrics and admin routes
    ("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}),
    ("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 1}),
    ("POST", "/invocations", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}),
    ("POST", "/tokenize", {"prompt": "hi"}),
    ("GET", "/v1/models", None),
    ("GET", "/metrics", None),
    ("GET", "/version", None),
]


async def _echo_app(scope: dict[str, object], receive: object, send: object) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
    await send({"type": "http.response.body", "body": b"reached the engine"})  # type: ignore[operator]


def test_middleware_guards_every_route_but_health(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "the-engine-key")
    app = EngineKeyMiddleware(_echo_app)  # type: ignore[arg-type]

    async def probe() -> None:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://engine") as client:
            for method, path, _ in GUARDED:
                assert (await client.request(method, path)).status_code == 401, path
                bad = await client.request(method, path, headers={"Authorization": "Bearer wrong"})
                assert bad.status_code == 401 and bad.json()["error"]["code"] == "invalid_api_key"
                good = await client.request(method, path, headers={"Authorization": "Bearer the-engine-key"})
                assert good.status_code == 200 and good.text == "reached the engine"
            assert (await client.get("/health")).status_code == 200
            assert (await client.post("/health")).status_code == 401  # only the gateway's probe is open

    asyncio.run(probe())


def test_engine_command_carries_the_key_in_its_environment_only(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, engine=EngineSettings(port=free_port()))
    engine = EngineProcess(settings, load_profile("smollm2-cpu"), Path("/models/x"))
    key = engine_api_key(settings)  # created once in <home>/engine-key, 0600
    assert (tmp_path / "engine-key").stat().st_mode & 0o777 == 0o600 and len(key) >= 32
    command, env = engine.command(), engine.environment()
    assert command[command.index("--middleware") + 1] == KEY_MIDDLEWARE
    assert key not in " ".join(command) and "--api-key" not in command  # argv is visible to every local user
    assert env["VLLM_API_KEY"] == key
    configured = Settings(home=tmp_path, engine=EngineSettings(api_key=SecretStr("configured-key-0001")))
    assert engine_api_key(configured) == "configured-key-0001"


@pytest.mark.engine
def test_gateway_with_a_key_still_works_with_an_engine_without_one(
    engine_url: str, engine_key: str | None, engine_model: str, tmp_path: Path
) -> None:
    """An engine started without a key (an external vLLM) ignores the key the gateway sends."""
    if engine_key is not None:
        pytest.skip("this session's engine checks a key (only an engine started without one shows this)")
    settings = gateway_settings(tmp_path, engine_url, "a-key-this-engine-may-not-check")
    server = ServerThread(create_app(settings, engine_model=engine_model, model_dir=None)).start()
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=120) as client:
            body = {"model": engine_model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
            assert client.post("/v1/chat/completions", json=body).status_code == 200
    finally:
        server.stop()


@pytest.mark.engine
def test_engine_with_a_key_refuses_others_and_serves_the_gateway(
    session_engine: EngineProcess | None, engine_key: str | None, engine_model: str, tmp_path: Path
) -> None:
    """The session's own engine, started by the product's `EngineProcess` with a key."""
    if session_engine is None or engine_key is None:
        pytest.skip("the engine was started outside this session (its argv and key are not this test's)")
    key = engine_key
    pid = session_engine._proc.pid if session_engine._proc is not None else -1
    assert key not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    with httpx.Client(base_url=session_engine.base_url, timeout=60) as direct:
        assert direct.get("/health").status_code == 200
        for method, path, body in GUARDED:
            for headers in ({}, {"Authorization": "Bearer not-the-key"}):
                refused = direct.request(method, path, json=body, headers=headers)
                assert refused.status_code == 401, (path, refused.status_code, refused.text[:200])
        assert direct.get("/v1/models", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    gateway = gateway_settings(tmp_path, session_engine.base_url, key)
    server = ServerThread(create_app(gateway, engine_model=engine_model, model_dir=None)).start()
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=180) as client:
            assert client.get("/health").json()["engine"] == "ok"
            chat = {"model": engine_model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
            assert client.post("/v1/chat/completions", json=chat).status_code == 200
            streamed = client.post("/v1/chat/completions", json={**chat, "stream": True})
            assert streamed.status_code == 200 and "data: [DONE]" in streamed.text
            plan = client.post("/v1/plans", json={"request": "Weather in Hangzhou on 2027-06-20"})
            assert plan.status_code == 200 and plan.json()["path"] in ("model", "model_retry"), plan.text
    finally:
        server.stop()

"""The engine killed (SIGKILL) in the middle of requests, then restarted: the session's SPARE vLLM engine
(tests/conftest.py `spare_engine`, never the session's own), killed here and started again on its port.

Clients in flight get an OpenAI-shaped 503 (a stream gets a final error event and [DONE]) within
seconds, not a hang; /health reports the engine unavailable; new requests get 503 + Retry-After at
once; when the engine is back the same gateway serves again without a restart.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from serving.app import create_app
from serving.engine.process import pid_alive
from tests.conftest import KEY_A, SpareEngine, gateway_settings
from tests.fakes.upstream import ServerThread
from tests.reliability.helpers import check_error_shape

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def _chat(model: str, max_tokens: int, stream: bool = False) -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": "Write a long story about a lighthouse."}],
            "max_tokens": max_tokens, "temperature": 0, "stream": stream}  # fmt: skip


def test_engine_killed_mid_request_then_restarted(
    spare_engine: SpareEngine, engine_key: str | None, engine_model: str, tmp_path: Path
) -> None:
    engine = spare_engine.running()
    server: ServerThread | None = None
    try:
        gw = gateway_settings(tmp_path, engine.base_url, engine_key)
        server = ServerThread(create_app(gw, engine_model=engine_model, model_dir=None)).start()
        client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=120)
        assert client.post("/v1/chat/completions", json=_chat(engine_model, 4)).status_code == 200

        # Two requests in flight when the engine dies: a whole-body one and a stream.
        answers: dict[str, httpx.Response] = {}
        worker = threading.Thread(
            target=lambda: answers.setdefault(
                "body", client.post("/v1/chat/completions", json=_chat(engine_model, 400))
            )
        )
        with client.stream("POST", "/v1/chat/completions", json=_chat(engine_model, 400, stream=True)) as stream:
            lines = stream.iter_lines()
            first = next(line for line in lines if line.startswith("data: "))
            assert "error" not in first
            worker.start()
            time.sleep(1.0)  # the body request is decoding now
            pid = engine._proc.pid  # type: ignore[union-attr]
            killed_at = time.monotonic()
            os.killpg(pid, signal.SIGKILL)
            rest = [line for line in lines if line.startswith("data: ")]
        stream_done_s = time.monotonic() - killed_at
        worker.join(timeout=60)
        body_done_s = time.monotonic() - killed_at
        assert rest[-1] == "data: [DONE]" and json.loads(rest[-2][6:])["error"]["code"] == "engine_unavailable"
        body = answers["body"]
        check_error_shape(body)
        assert body.status_code == 503 and body.json()["error"]["code"] == "engine_unavailable"
        assert stream_done_s < 15 and body_done_s < 15  # failed fast, no hang until the timeout
        engine.stop()
        assert not pid_alive(pid)

        health = client.get("/health")
        assert health.status_code == 503 and health.json()["engine"] == "unavailable"
        refused = client.post("/v1/chat/completions", json=_chat(engine_model, 4))
        check_error_shape(refused)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "5"

        # The engine comes back on the same port: the same gateway serves again.
        assert spare_engine.running().base_url == engine.base_url
        assert client.get("/health").json()["engine"] == "ok"
        again = client.post("/v1/chat/completions", json=_chat(engine_model, 4))
        assert again.status_code == 200, again.text
        metrics = client.get("/metrics").text
        assert 'planstack_upstream_failures_total{reason="unavailable"}' in metrics
        client.close()
    finally:
        if server is not None:
            server.stop()

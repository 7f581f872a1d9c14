"""A fake OpenAI-compatible upstream (NOT vLLM) for fast gateway unit tests (marker `fake_upstream`).

It records every body it receives, so tests can check what the gateway forwards, and can be told to
fail, stall or stream. It runs as a real HTTP server on a loopback port (see `ServerThread`), so the
gateway's real connection handling (connect errors, timeouts) is exercised.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse


@dataclass
class FakeBehaviour:
    delay_s: float = 0.0
    status: int = 200
    error_message: str = "fake upstream error"
    reply: str = "hello from the fake upstream"
    replies: list[str] = field(default_factory=list)  # answered first, one per request, then `reply`
    received: list[dict[str, Any]] = field(default_factory=list)
    received_headers: list[dict[str, str]] = field(default_factory=list)

    def next_reply(self) -> str:
        return self.replies.pop(0) if self.replies else self.reply


def create_fake_upstream(model: str, behaviour: FakeBehaviour) -> FastAPI:
    app = FastAPI()

    @app.get("/health")
    async def health() -> Response:
        return Response(status_code=200)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": model, "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        body = await request.json()
        behaviour.received.append(body)
        behaviour.received_headers.append(dict(request.headers))
        if behaviour.delay_s:
            await asyncio.sleep(behaviour.delay_s)
        if behaviour.status != 200:
            error = {"message": behaviour.error_message, "type": "BadRequestError", "param": None, "code": 400}
            return JSONResponse({"error": error}, status_code=behaviour.status)
        reply = behaviour.next_reply()
        if body.get("stream"):
            return StreamingResponse(_stream(model, reply), media_type="text/event-stream")
        return JSONResponse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
            }
        )

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        body = await request.json()
        behaviour.received.append(body)
        choice = {"index": 0, "text": behaviour.next_reply(), "logprobs": None, "finish_reason": "stop"}
        return JSONResponse(
            {"id": "cmpl-fake", "object": "text_completion", "created": int(time.time()), "model": model,
             "choices": [choice], "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}}
        )  # fmt: skip

    return app


async def _stream(model: str, reply: str) -> AsyncIterator[bytes]:
    for word in reply.split(" "):
        chunk = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}],
        }
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerThread:
    """Runs an ASGI app under uvicorn on a loopback port in a background thread."""

    def __init__(self, app: Any, port: int | None = None) -> None:
        self.port = port or free_port()
        self._app = app
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        # Streams a test leaves open (followers of a run that never ends) are cut 2 s into shutdown.
        config = uvicorn.Config(
            self._app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on", timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"server on port {self.port} did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=20)
        self._server, self._thread = None, None

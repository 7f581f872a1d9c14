"""ASGI middleware that vLLM loads (`--middleware`) so that only the gateway can use the engine.

vLLM's own `--api-key` (here: `VLLM_API_KEY`, so the key is not in the process's argv for `ps` to
show) guards only the `/v1`, `/v2`, `/inference` and `/cohere` prefixes; vLLM 0.32's own docs say
`/invocations` (the same inference as `/v1`) stays open, and so do `/tokenize`, `/detokenize`,
`/generative_scoring`, `/scale_elastic_ep`, `/metrics` (prefix-cache counters: a timing side
channel) and others. This middleware asks for the same key on every route except `GET /health`,
which the gateway polls. Standard library only: it runs inside the engine's process.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

KEY_ENV = "VLLM_API_KEY"
OPEN_ROUTES = frozenset({("GET", "/health"), ("HEAD", "/health")})

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_REFUSAL = json.dumps(
    {"error": {"message": "missing or invalid engine key", "type": "authentication_error", "param": None,
               "code": "invalid_api_key"}}
).encode()  # fmt: skip


class EngineKeyMiddleware:
    """Every HTTP and WebSocket route but `GET /health` needs `Authorization: Bearer <VLLM_API_KEY>`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        key = os.environ.get(KEY_ENV, "")
        self._digest = hashlib.sha256(key.encode()).digest() if key else None

    def _authorised(self, scope: Scope) -> bool:
        if self._digest is None:
            return True  # started without a key: nothing to check
        if (scope.get("method"), scope.get("path")) in OPEN_ROUTES:
            return True
        header = next((value for name, value in scope.get("headers", ()) if name == b"authorization"), b"")
        scheme, _, token = bytes(header).partition(b" ")
        presented = hashlib.sha256(token.strip()).digest()
        return scheme.lower() == b"bearer" and hmac.compare_digest(presented, self._digest)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._authorised(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(_REFUSAL)).encode())]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": _REFUSAL})

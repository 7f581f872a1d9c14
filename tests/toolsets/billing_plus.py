"""The example billing service (examples/openapi_service) with test controls around it, as its own process:

    python -m tests.toolsets.billing_plus --host 127.0.0.1 --port PORT

- every request's `Authorization` header is remembered as a SHA-256 (`GET /_seen`): a test checks
  that the toolset's credential arrived without the service ever echoing it;
- `POST /_faults {"fail_after_create": N}`: the next N invoice creations are committed by the service
  and then answered 503 (the answer is lost, as on a dropped connection): a retry must not create twice;
- `POST /_faults {"hold_after_create": true}`: the next creation is committed and its answer held
  until `POST /_release` (the test kills the gateway meanwhile); `GET /_held` says whether one is held.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
from typing import Any

import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from examples.openapi_service.app import create_app


class Controls:
    def __init__(self) -> None:
        self.seen: list[str] = []
        self.fail_after_create = 0
        self.hold_after_create = False
        self.held = 0
        self.release = asyncio.Event()


class Faults:
    """ASGI middleware: remembers credentials, and loses or holds the answers of invoice creations."""

    def __init__(self, app: ASGIApp, controls: Controls) -> None:
        self.app = app
        self.controls = controls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        auth = headers.get(b"authorization")
        if auth is not None:
            self.controls.seen.append(hashlib.sha256(auth).hexdigest())
        creating = scope["method"] == "POST" and scope["path"] == "/invoices"
        if not creating or not (self.controls.fail_after_create or self.controls.hold_after_create):
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def keep(message: Message) -> None:
            held.append(message)

        await self.app(scope, receive, keep)  # the invoice is created (or replayed) here
        if self.controls.hold_after_create:
            self.controls.hold_after_create = False
            self.controls.held += 1
            await self.controls.release.wait()
            self.controls.held -= 1
            for message in held:  # answered late: the gateway that asked is gone by now
                await send(message)
            return
        self.controls.fail_after_create -= 1
        await Response("lost answer", status_code=503)(scope, receive, send)


def build() -> ASGIApp:
    controls = Controls()
    billing = create_app()

    @billing.get("/_seen", include_in_schema=False)
    async def seen() -> dict[str, Any]:
        return {"authorization_sha256": controls.seen}

    @billing.post("/_faults", include_in_schema=False)
    async def faults(request: Request) -> dict[str, Any]:
        body = await request.json()
        controls.fail_after_create = int(body.get("fail_after_create", 0))
        controls.hold_after_create = bool(body.get("hold_after_create", False))
        controls.release = asyncio.Event()
        return {"ok": True}

    @billing.post("/_release", include_in_schema=False)
    async def release() -> dict[str, Any]:
        controls.release.set()
        return {"ok": True}

    @billing.get("/_held", include_in_schema=False)
    async def held() -> JSONResponse:
        return JSONResponse({"held": controls.held})

    app: FastAPI = billing
    return Faults(app, controls)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    options = parser.parse_args()
    uvicorn.run(build(), host=options.host, port=options.port, log_level="warning")


if __name__ == "__main__":
    main()

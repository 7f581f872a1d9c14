"""An HTTP service that misbehaves on purpose, for the egress and HTTP-caller tests.

- `/echo[/...]` (any method): what arrived (method, path, query pairs, headers, body, Host).
- `/redirect` (GET, POST): 302 to /echo (a client that follows it shows up in `hits["echo"]`).
- `/big?size=N`: N bytes streamed without a Content-Length; `/big-declared?size=N`: with one.
- `/slow`: answers only when released (POST /release), never by a timer.
- `/status/{code}?retry_after=...`: that status, a short body, an optional Retry-After.
- `/text`: a 2xx plain-text answer.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, StreamingResponse


@dataclass
class OddService:
    url: str = ""
    hits: Counter[str] = field(default_factory=Counter)
    released: asyncio.Event | None = None  # created on the server's loop

    def release_all(self, url: str) -> None:
        httpx.post(f"{url}/release", timeout=10)


def create_odd_service(service: OddService) -> FastAPI:
    app = FastAPI()

    def released() -> asyncio.Event:
        if service.released is None:
            service.released = asyncio.Event()
        return service.released

    @app.api_route("/echo", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    @app.api_route("/echo/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def echo(request: Request) -> JSONResponse:
        service.hits["echo"] += 1
        body = (await request.body()).decode()
        return JSONResponse(
            {
                "method": request.method,
                "path": request.url.path,
                "raw_path": request.scope["raw_path"].decode(),
                "query": [[k, v] for k, v in request.query_params.multi_items()],
                "headers": dict(request.headers),
                "body": body,
            }
        )

    @app.api_route("/redirect", methods=["GET", "POST"])
    async def redirect() -> RedirectResponse:
        service.hits["redirect"] += 1
        return RedirectResponse("/echo", status_code=302)

    @app.get("/big")
    async def big(size: int) -> StreamingResponse:
        async def chunks() -> AsyncIterator[bytes]:
            left = size
            while left > 0:
                step = min(left, 64 * 1024)
                left -= step
                yield b"x" * step

        return StreamingResponse(chunks(), media_type="text/plain")

    @app.get("/big-declared")
    async def big_declared(size: int) -> Response:
        return Response(b"x" * size, media_type="text/plain")

    @app.api_route("/slow", methods=["GET", "POST"])
    async def slow() -> dict[str, bool]:
        service.hits["slow"] += 1
        await released().wait()
        return {"late": True}

    @app.post("/release")
    async def release() -> Response:
        released().set()
        return Response(status_code=204)

    @app.api_route("/status/{code}", methods=["GET", "POST"])
    async def status(code: int, retry_after: str | None = None) -> Response:
        service.hits[f"status-{code}"] += 1
        headers = {"Retry-After": retry_after} if retry_after else {}
        return PlainTextResponse(f"status {code} from the odd service", status_code=code, headers=headers)

    @app.get("/text")
    async def text() -> PlainTextResponse:
        return PlainTextResponse("plain words")

    return app

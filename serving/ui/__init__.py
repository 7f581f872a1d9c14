"""The operators' web UI under /ui/: static files written for planstack (no framework, no CDN).

`index.html`, `app.css` and the JavaScript modules (`app.js` routes; one module per page or concern:
`runs.js`, `run.js`, `dag.js`, `gantt.js`, ...) are served as they are, with a strict
Content-Security-Policy (scripts and styles from this origin only, no inline script, no framing, API
calls to this origin only). The page holds no secret: it asks for an API key once, keeps it in the tab's sessionStorage,
and sends it as a bearer token on every API call; a tenant sees only its own runs, like the API.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import RedirectResponse, Response

from serving.errors import NotFoundError

STATIC = Path(__file__).resolve().parent / "static"
MEDIA_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def ui_router() -> APIRouter:
    """The /ui routes; the files are read once, here (not at import time)."""
    files = {path.name: path.read_bytes() for path in sorted(STATIC.iterdir()) if path.suffix in MEDIA_TYPES}
    router = APIRouter(include_in_schema=False)

    def asset(name: str) -> Response:
        if name not in files:
            raise NotFoundError("no such file in the web UI", code="not_found")
        media = MEDIA_TYPES[Path(name).suffix] + "; charset=utf-8"
        return Response(files[name], media_type=media, headers=HEADERS)

    @router.get("/ui")
    async def ui_root() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=308)

    @router.get("/ui/")
    async def ui_index() -> Response:
        return asset("index.html")

    @router.get("/ui/{name}")
    async def ui_asset(name: str) -> Response:
        return asset(name)

    return router

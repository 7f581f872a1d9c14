"""`python -m examples.openapi_service [--host 127.0.0.1] [--port 8766]`: serve the example billing
service (OpenAPI document at /openapi.json, health at /health)."""

from __future__ import annotations

import argparse

import uvicorn

from examples.openapi_service.app import create_app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m examples.openapi_service", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8766)
    options = parser.parse_args(argv)
    uvicorn.run(create_app(), host=options.host, port=options.port, log_level="warning")


if __name__ == "__main__":
    main()

"""`python -m examples.mcp_server [--host 127.0.0.1] [--port 8765] [--stdio]`: serve the example
inventory over streamable HTTP at http://HOST:PORT/mcp (health: /health), or over stdin/stdout."""

from __future__ import annotations

import argparse

from examples.mcp_server.server import build_server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m examples.mcp_server", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--stdio", action="store_true", help="speak MCP on stdin/stdout instead of HTTP")
    options = parser.parse_args(argv)
    server = build_server()
    if options.stdio:
        server.run("stdio")
    else:
        server.run("streamable-http", host=options.host, port=options.port)


if __name__ == "__main__":
    main()

"""An example MCP server: `python -m examples.mcp_server --host 127.0.0.1 --port 8765`."""

"""Tool sources beyond the gateway's own Python tools: the services a tenant connects (MCP servers,
HTTP services described by OpenAPI), tools the calling app executes, and the served model as a step.

- `tool_source`: the `ToolSource` protocol, `RemoteTool` definitions, snapshots, `CallContext`.
- `remote_spec`: a source's tools as the scheduler's `ToolSpec`s (`RemoteToolSpec`, `registry_with`).
- `mcp_client` / `mcp_sessions`: MCP servers through the official SDK, one pooled session per toolset.
- `http_caller` / `http_binding`: imported OpenAPI operations, one HTTP request per call.
- `egress`: where outbound calls may go, enforced at connect time; `auth` and `credentials`: how a
  toolset authenticates, and its secrets sealed at rest; `errors`: what can go wrong, typed.
"""

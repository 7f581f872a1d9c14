"""Tool sources beyond the gateway's own Python tools: the services a tenant connects (MCP servers,
HTTP services described by OpenAPI), tools the calling app executes, and the served model as a step."""

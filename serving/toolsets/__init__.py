"""Tool sources a tenant connects, turned into planner tools and call bindings, and the runs that use them.

- `service.ToolsetService`: a tenant's toolsets (MCP servers, OpenAPI services) — register (egress
  check, listing or import, checks, the credential sealed), list, show, refresh, delete.
- `connections.ToolsetConnections`: the live sources of this process, one per toolset.
- `run_tools.RunToolsService`: the catalog of a plan or run (`toolsets`, the caller's own `tools`,
  the reserved `builtin`, `llm`, `ask_user`), what a run records, and the registry that executes it.
- `llm_model.EngineStepModel`: the served model for the `llm_generate` / `llm_extract` steps.
- `openapi_import.import_openapi(text)`: an OpenAPI 3.0/3.1 document (JSON or YAML) → one
  `ImportedTool(tool, binding)` per operation with an `operationId` (the OpenAI-format tool the planner
  plans over, and the `executors.sources.http_binding.HttpBinding` the HTTP caller sends).
- `config.ToolsConfig`: the settings section `tools` (egress policy, limits, stdio servers, steps).
"""

from serving.toolsets.openapi_import import ImportedTool, OpenApiImport, import_openapi
from serving.toolsets.openapi_load import ImportLimits, OpenApiInvalidError

__all__ = ["ImportLimits", "ImportedTool", "OpenApiImport", "OpenApiInvalidError", "import_openapi"]

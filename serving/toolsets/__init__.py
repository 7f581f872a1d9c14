"""Tool sources a tenant connects, turned into planner tools and call bindings.

`openapi_import.import_openapi(text)`: an OpenAPI 3.0/3.1 document (JSON or YAML) → one
`ImportedTool(tool, binding)` per operation with an `operationId` (the OpenAI-format tool the planner
plans over, and the `executors.sources.http_binding.HttpBinding` the HTTP caller sends).
"""

from serving.toolsets.openapi_import import ImportedTool, OpenApiImport, import_openapi
from serving.toolsets.openapi_load import ImportLimits, OpenApiInvalidError

__all__ = ["ImportLimits", "ImportedTool", "OpenApiImport", "OpenApiInvalidError", "import_openapi"]

"""The toolsets' request checks as door jobs: module-level functions of picklable arguments, so that the
door (serving/door) runs them in its worker processes on the tenant's fair share and within its
deadline, or on the event loop when the input is tiny.

- `check_definitions`: a toolset's tools as the planner and the executors will take them (their size,
  reserved names, argument and output schemas compiled by the gateway's RE2-based validator, the planner's
  catalog rules), at registration, refresh and `tools/list_changed`.
- `client_tools`: the caller's own OpenAI-format tools of a run, as definitions (same checks).
- `output_problems`: what is wrong with an answer to a tool call under the tool's output schema.

- `import_document`: an OpenAPI document (text, or the JSON object a registration carried) imported.
"""

from __future__ import annotations

import json
from typing import Any

from executors.sources.client_tools import ASK_USER_TOOL, client_tool
from executors.sources.remote_spec import SchemaCheckFactory
from executors.sources.tool_source import RemoteTool, canonical_json
from planner.catalog import CatalogError, ToolCatalog
from serving.toolsets.errors import InvalidClientTools, ToolsetInvalid
from serving.toolsets.openapi_import import OpenApiImport, import_openapi
from serving.toolsets.openapi_load import ImportLimits
from serving.toolsets.protocol import RESERVED

STEP_TOOLS = frozenset({ASK_USER_TOOL.name, "llm_generate", "llm_extract"})


def import_document(document: str | dict[str, Any], limits: ImportLimits) -> OpenApiImport:
    """The document's operations as tools (OpenApiInvalidError, or ToolsetInvalid when it is too large)."""
    text = document if isinstance(document, str) else json.dumps(document)
    if len(text.encode()) > limits.max_bytes:
        raise ToolsetInvalid(f"the document is larger than {limits.max_bytes} bytes", param="document")
    return import_openapi(text, limits)


def check_definitions(tools: tuple[RemoteTool, ...], schema_check: SchemaCheckFactory, max_bytes: int) -> None:
    """ToolsetInvalid when the definitions take over `max_bytes` (every run using them keeps a copy), or
    naming the first tool the planner or the executors could not take."""
    size = sum(len(canonical_json(tool.model_dump(mode="json")).encode()) for tool in tools)
    if size > max_bytes:
        raise ToolsetInvalid(f"the toolset's tool definitions take {size} bytes; the limit is {max_bytes}")
    for tool in tools:
        if tool.name in RESERVED or tool.name in STEP_TOOLS:
            raise ToolsetInvalid(f"tool {tool.name!r}: that name is reserved for a built-in tool")
        try:
            schema_check(tool.parameters)
            if tool.output_schema is not None:
                schema_check(tool.output_schema)
        except ValueError as exc:
            raise ToolsetInvalid(f"tool {tool.name!r}: {exc}") from None
    try:
        ToolCatalog.from_openai([tool.openai_tool() for tool in tools])
    except CatalogError as exc:
        raise ToolsetInvalid(f"the planner cannot take these tools: {exc.message}") from None


def client_tools(definitions: list[dict[str, Any]], schema_check: SchemaCheckFactory) -> list[RemoteTool]:
    """The caller's tools as definitions; InvalidClientTools naming the first one that is not usable."""
    tools = []
    for index, definition in enumerate(definitions):
        try:
            tool = client_tool(definition)
            schema_check(tool.parameters)
            if tool.output_schema is not None:
                schema_check(tool.output_schema)
        except ValueError as exc:
            raise InvalidClientTools(f"tools[{index}]: {_first_line(exc)}") from None
        tools.append(tool)
    return tools


def output_problems(schema: dict[str, Any], output: Any, schema_check: SchemaCheckFactory) -> list[str]:
    """The problems of `output` under `schema` (empty: it matches)."""
    return list(schema_check(schema)(output))


def _first_line(exc: ValueError) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return " ".join(lines[:3])[:300] if lines else type(exc).__name__

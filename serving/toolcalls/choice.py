"""`tools` + `tool_choice` + `parallel_tool_calls` → what the grammar may decode in this turn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.catalog import CatalogError, ToolCatalog
from serving.errors import InvalidRequestError
from serving.settings import ToolCallSettings


@dataclass(frozen=True)
class CallPolicy:
    """`offered`: the tools the turn may call; `min_calls` 0 lets the model answer in text ("auto");
    `named`: a forced tool (no selection step)."""

    catalog: ToolCatalog
    offered: tuple[str, ...]
    min_calls: int
    max_calls: int
    named: str | None = None
    mode: str = "auto"


def tool_catalog(tools: Any) -> ToolCatalog:
    """Client tool definitions, checked here (names, argument names, schema depth and size); the
    gateway checks them at the door instead (`ToolCallService.prepare`: off the loop, reused)."""
    try:
        return ToolCatalog.from_openai(tools)
    except CatalogError as exc:
        raise invalid_tools(exc) from exc


def invalid_tools(exc: CatalogError) -> InvalidRequestError:
    return InvalidRequestError("; ".join(exc.problems[:5])[:2000], param="tools", code="invalid_tools")


def named_function(choice: dict[str, Any]) -> str | None:
    """The function name of `{"type": "function", "function": {"name": ...}}` (chat) or
    `{"type": "function", "name": ...}` (Responses); None for any other shape."""
    if choice.get("type") != "function":
        return None
    inner = choice.get("function")
    name = inner.get("name") if isinstance(inner, dict) else choice.get("name")
    return name if isinstance(name, str) else None


def call_policy(
    tools: Any, tool_choice: str | dict[str, Any] | None, parallel: bool | None, settings: ToolCallSettings
) -> CallPolicy:
    """`tools`: OpenAI-format definitions, or a catalog the door has checked already."""
    catalog = tools if isinstance(tools, ToolCatalog) else tool_catalog(tools)
    max_calls = 1 if parallel is False else settings.max_parallel_calls
    if tool_choice is None or tool_choice == "auto":
        return CallPolicy(catalog, tuple(catalog.names()), 0, max_calls, mode="auto")
    if tool_choice == "required":
        return CallPolicy(catalog, tuple(catalog.names()), 1, max_calls, mode="required")
    name = named_function(tool_choice) if isinstance(tool_choice, dict) else None
    if name is None:
        raise InvalidRequestError(
            'tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}',
            param="tool_choice",
        )
    if name not in catalog:
        raise InvalidRequestError(f"tool_choice names {name!r}, which is not in tools", param="tool_choice")
    return CallPolicy(catalog, (name,), 1, 1, named=name, mode="named")

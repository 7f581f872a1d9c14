"""MCP servers as a tool source, through the official `mcp` SDK.

`tools/list` becomes the source's snapshot: each MCP tool a `RemoteTool` with its `inputSchema`
as parameters, its `outputSchema` as output schema (what the planner offers references into) and
its `annotations` recorded. The annotations also set the policy, unless the operator overrides it:
`destructiveHint` → every call waits for approval; calls are retried only for tools that say
`readOnlyHint` or `idempotentHint` (for any other tool a second attempt could repeat a side effect).
Annotations are a server's claims, not guarantees: they can only make planstack more careful
(approval) or allow retries of a call the server itself called harmless to repeat.

`tools/call` answers: `structuredContent` → the output; otherwise the text content → `{"text": ...}`;
`isError` → `RemoteToolError` (not retried) with the server's message as `data`. Timeouts and lost
connections are typed errors whose `retryable` follows the tool's policy. Calls go through
`session.send_request` rather than `Client.call_tool`: the SDK's own output check compiles the
server's schema with Python's backtracking `re`; planstack checks outputs itself (the adapter's
injected, RE2-based validator), so a hostile schema cannot stall the gateway.

Sessions are pooled per toolset and reconnect after a server restart (mcp_sessions.py);
`notifications/tools/list_changed` refreshes the snapshot and then calls `on_tools_changed`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from executors.errors import ToolError, ToolTimeoutError
from executors.sources.errors import RemoteToolError, RemoteUnavailable, SourceError, bounded_text
from executors.sources.mcp_sessions import Endpoint, McpSessionPool, SessionUnavailable, leaf_errors
from executors.sources.tool_source import (
    MAX_DESCRIPTION_CHARS,
    CallContext,
    PolicyOverrides,
    RemoteTool,
    ToolPolicy,
    ToolSnapshot,
    bounded_schema,
    catalog_name,
)

logger = logging.getLogger("planstack.sources.mcp")
MAX_TOOLS = 128
MAX_LIST_PAGES = 20
MAX_TEXT_CHARS = 100_000


def policy_from_annotations(annotations: ToolAnnotations | None, *, timeout_s: float) -> ToolPolicy:
    """What the MCP annotations say about approval and retries (see module doc)."""
    read_only = bool(annotations and annotations.read_only_hint)
    idempotent = bool(annotations and annotations.idempotent_hint)
    destructive = bool(annotations and annotations.destructive_hint) and not read_only
    return ToolPolicy(
        approval="required" if destructive else "none", retryable=read_only or idempotent, timeout_s=timeout_s
    )


def remote_tool(tool: Tool, *, taken: list[str], overrides: PolicyOverrides, timeout_s: float) -> RemoteTool:
    """One listed MCP tool as a `RemoteTool` (ValueError when its definition is unusable)."""
    name = catalog_name(tool.name, taken)
    description = (tool.description or tool.title or tool.name).strip()
    parameters = bounded_schema(tool.input_schema, f"{tool.name}.inputSchema")
    output = None if tool.output_schema is None else bounded_schema(tool.output_schema, f"{tool.name}.outputSchema")
    annotations = None if tool.annotations is None else tool.annotations.model_dump(by_alias=True, exclude_none=True)
    return RemoteTool(
        name=name,
        remote_name=tool.name,
        description=bounded_text(description, MAX_DESCRIPTION_CHARS - 40),
        parameters=parameters,
        output_schema=output,
        policy=overrides.apply(name, policy_from_annotations(tool.annotations, timeout_s=timeout_s)),
        annotations=annotations,
    )


def output_of(tool: RemoteTool, result: CallToolResult) -> Any:
    """The node output of a `tools/call` result (see module doc)."""
    text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
    if result.is_error:
        raise RemoteToolError(
            f"the MCP tool {tool.remote_name!r} reported an error (its message is in data)",
            data={"message": bounded_text(text)},
        )
    if result.structured_content is not None:
        return result.structured_content
    return {"text": bounded_text(text, MAX_TEXT_CHARS)}


class McpToolSource:
    """An MCP server as a `ToolSource` (one per toolset). Build it with an `HttpEndpoint` for a
    tenant's server or a `StdioEndpoint` for an operator-configured one."""

    def __init__(
        self,
        source_id: str,
        endpoint: Endpoint,
        *,
        overrides: PolicyOverrides | None = None,
        default_timeout_s: float = 30.0,
        snapshot: ToolSnapshot | None = None,
        on_tools_changed: Callable[[ToolSnapshot], Awaitable[None]] | None = None,
        mode: str = "auto",
        connect_timeout_s: float = 10.0,
    ) -> None:
        self._source_id = source_id
        self._overrides = overrides or PolicyOverrides()
        self._default_timeout_s = default_timeout_s
        self._snapshot = snapshot
        self._on_tools_changed = on_tools_changed
        self.pool = McpSessionPool(
            endpoint, on_tools_changed=self._tools_changed, mode=mode, connect_timeout_s=connect_timeout_s
        )

    @property
    def source_id(self) -> str:
        return self._source_id

    def snapshot(self) -> ToolSnapshot:
        if self._snapshot is None:
            raise SourceError(f"toolset {self._source_id!r} has not been listed yet", hint="refresh it first")
        return self._snapshot

    async def refresh(self) -> ToolSnapshot:
        """`tools/list` (all pages, bounded) as a new snapshot."""
        try:
            tools = await self.pool.request(self._list_all, timeout_s=self._default_timeout_s)
        except Exception as exc:
            raise self._error(exc, retryable=True, what="listing the tools") from None
        taken: list[str] = []
        converted = []
        for tool in tools:
            try:
                item = remote_tool(tool, taken=taken, overrides=self._overrides, timeout_s=self._default_timeout_s)
            except ValueError as exc:
                raise SourceError(f"toolset {self._source_id!r}: {exc}") from None
            taken.append(item.name)
            converted.append(item)
        self._snapshot = ToolSnapshot(source_id=self._source_id, tools=tuple(converted))
        return self._snapshot

    async def call(self, tool: RemoteTool, args: Mapping[str, Any], context: CallContext) -> Any:
        """`tools/call` of `tool.remote_name`; the output or a typed `ToolError`."""
        request = CallToolRequest(params=CallToolRequestParams(name=tool.remote_name, arguments=dict(args)))
        timeout_s = tool.policy.timeout_s

        async def send(client: Client) -> CallToolResult:
            return await client.session.send_request(request, CallToolResult, request_read_timeout_seconds=timeout_s)

        try:
            result = await self.pool.request(send, timeout_s=timeout_s)
        except Exception as exc:
            raise self._error(exc, retryable=tool.policy.retryable, what=f"calling {tool.remote_name!r}") from None
        return output_of(tool, result)

    async def aclose(self) -> None:
        await self.pool.aclose()

    async def _list_all(self, client: Client) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await client.session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools.extend(page.tools)
            if len(tools) > MAX_TOOLS:
                raise SourceError(f"the MCP server lists more than {MAX_TOOLS} tools")
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise SourceError(f"the MCP server's tool list has more than {MAX_LIST_PAGES} pages")

    async def _tools_changed(self) -> None:
        snapshot = await self.refresh()
        if self._on_tools_changed is not None:
            await self._on_tools_changed(snapshot)

    def _error(self, exc: Exception, *, retryable: bool, what: str) -> Exception:
        """`exc` (from the SDK, the transport or the egress policy) as a typed error."""
        if isinstance(exc, (ToolError, SourceError)):
            return exc
        where = f"{what} on MCP toolset {self._source_id!r}"
        if isinstance(exc, TimeoutError) or (isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT):
            error = ToolTimeoutError(f"{where} timed out")
            error.retryable = retryable
            return error
        if isinstance(exc, MCPError):
            if exc.code == CONNECTION_CLOSED:
                return RemoteUnavailable(f"{where}: the connection to the server was lost", retryable=retryable)
            return RemoteToolError(
                f"{where}: the server answered with an MCP error {exc.code}",
                data={"message": bounded_text(str(exc.error.message))},
            )
        if isinstance(exc, SessionUnavailable):
            for leaf in leaf_errors(exc.__cause__) if exc.__cause__ is not None else []:
                if isinstance(leaf, ToolError):
                    return leaf  # e.g. the egress policy refused the connection
            # The session could not be opened: nothing was sent, so another attempt is harmless.
            return RemoteUnavailable(f"{where}: the server could not be reached", retryable=True)
        logger.warning("%s failed unexpectedly: %r", where, exc)
        return RemoteUnavailable(f"{where} failed ({type(exc).__name__})", retryable=retryable)

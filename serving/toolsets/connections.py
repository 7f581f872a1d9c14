"""The live tool sources of this process: one per toolset, built from its stored record on first use.

A toolset's source owns its connection pool (egress-checked, `tools.client` limits) and, for an MCP
server, its one pooled session; it is shared by every run of the tenant and closed when the toolset
is deleted or the gateway stops. The credential is opened from its sealed form only here, into the
source's request headers. Sources call whatever definition they are given, so a run calls the
definitions it recorded even after the toolset's tools changed.

An MCP server's `notifications/tools/list_changed` refreshes the source's snapshot; the new
definitions are stored (`on_listed`) for the next runs and plans, on every replica.

The specs the scheduler runs (`RemoteToolSpec`: argument checks compiled from the tool's schemas)
are cached per toolset and definition digest; compiling them is CPU work, done off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from executors.sources.auth import AuthScheme
from executors.sources.credentials import CredentialSealer, SecretValue
from executors.sources.egress import Resolver, system_resolver
from executors.sources.errors import SourceError
from executors.sources.http_caller import HttpToolSource
from executors.sources.mcp_client import McpToolSource
from executors.sources.mcp_sessions import HttpEndpoint, StdioEndpoint
from executors.sources.remote_spec import RemoteToolSpec, SchemaCheckFactory, remote_tool_spec
from executors.sources.tool_source import CallContext, PolicyOverrides, RemoteTool, ToolSnapshot, ToolSource
from executors.stores import ToolsetRecord
from serving.toolsets.config import ToolsConfig
from serving.toolsets.offload import off_loop

logger = logging.getLogger("planstack.toolsets")
CREDENTIAL_SLOT = "auth"
Listed = Callable[[ToolsetRecord, ToolSnapshot], Awaitable[None]]


class HostsResolver:
    """`tools.hosts` first (like a hosts file), then the system's resolver."""

    def __init__(self, table: dict[str, list[str]], fallback: Resolver = system_resolver) -> None:
        self._table = {name.lower().rstrip("."): list(addresses) for name, addresses in table.items()}
        self._fallback = fallback

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        found = self._table.get(host.lower().rstrip("."))
        return list(found) if found is not None else await self._fallback(host, port)


class GoneSource:
    """Stands in for a toolset deleted after a run recorded its tools: every call fails, not retried."""

    def __init__(self, toolset_id: str, name: str) -> None:
        self._id = toolset_id
        self._name = name

    @property
    def source_id(self) -> str:
        return self._id

    def snapshot(self) -> ToolSnapshot:
        return ToolSnapshot(source_id=self._id, tools=())

    async def refresh(self) -> ToolSnapshot:
        return self.snapshot()

    async def call(self, tool: RemoteTool, args: Any, context: CallContext) -> Any:
        raise SourceError(f"the toolset {self._name!r} was deleted after this run recorded its tools")

    async def aclose(self) -> None:
        return None


@dataclass
class _Live:
    source: ToolSource
    specs: dict[str, RemoteToolSpec] = field(default_factory=dict)  # definition digest → spec


def overrides_of(record: ToolsetRecord, config: ToolsConfig) -> PolicyOverrides:
    """The operator's and the tenant's word over the server's annotations: a tenant can only ask for more
    approvals; only the operator waives the approval of destructive tools."""
    required = list(record.config.get("require_approval") or [])
    everything = "*" in required
    return PolicyOverrides(
        approval="required" if everything else ("none" if config.destructive_approval == "none" else None),
        tools={name: "required" for name in required if name != "*"},
        timeout_s=record.config.get("timeout_s") or config.default_timeout_s,
    )


def snapshot_of(record: ToolsetRecord) -> ToolSnapshot:
    return ToolSnapshot(
        source_id=record.toolset_id, tools=tuple(RemoteTool.model_validate(tool) for tool in record.tools)
    )


class ToolsetConnections:
    def __init__(
        self,
        config: ToolsConfig,
        sealer: CredentialSealer,
        schema_check: SchemaCheckFactory,
        *,
        resolver: Resolver | None = None,
    ) -> None:
        self.config = config
        self._sealer = sealer
        self._schema_check = schema_check
        self.resolver: Resolver = resolver or HostsResolver(config.hosts)
        self.on_listed: Listed | None = None
        self._live: dict[str, _Live] = {}
        self._lock = asyncio.Lock()

    async def check_url(self, url: str) -> None:
        """The registration check: `EgressRefused` (400) for a URL the operator's policy refuses now."""
        await self.config.egress.check_resolved(url, self.resolver)

    def build(self, record: ToolsetRecord, *, snapshot: ToolSnapshot | None = None) -> ToolSource:
        """A new source for `record` (its credential opened into the request headers)."""
        config = record.config
        auth = AuthScheme.model_validate(config.get("auth") or {})
        secret = self._secret(record)
        snapshot = snapshot if snapshot is not None else (snapshot_of(record) if record.tools else None)
        if record.kind == "openapi":
            return HttpToolSource(
                record.toolset_id,
                str(config["base_url"]),
                snapshot or ToolSnapshot(source_id=record.toolset_id, tools=()),
                policy=self.config.egress,
                limits=self.config.client,
                resolver=self.resolver,
                auth=auth,
                secret=secret,
            )
        if config.get("server"):
            server = self.config.stdio_servers.get(str(config["server"]))
            if server is None:
                raise SourceError(f"the operator no longer configures the stdio server {config['server']!r}")
            endpoint: HttpEndpoint | StdioEndpoint = StdioEndpoint(
                server.command, server.args, env=server.env or None, cwd=server.cwd
            )
        else:
            endpoint = HttpEndpoint(
                str(config["url"]),
                self.config.egress,
                self.config.client,
                resolver=self.resolver,
                auth=auth,
                secret=secret,
            )
        return McpToolSource(
            record.toolset_id,
            endpoint,
            overrides=overrides_of(record, self.config),
            default_timeout_s=record.config.get("timeout_s") or self.config.default_timeout_s,
            snapshot=snapshot,
            on_tools_changed=self._changed(record),
            connect_timeout_s=self.config.connect_timeout_s,
        )

    async def listed(self, record: ToolsetRecord) -> ToolSnapshot:
        """The tools the source lists now: the MCP server's `tools/list` (through the toolset's live
        source when it has one), or an OpenAPI toolset's imported operations."""
        if record.kind == "openapi":
            return snapshot_of(record)
        live = self._live.get(record.toolset_id)
        if live is not None:
            return await live.source.refresh()
        source = self.build(record)
        try:
            return await source.refresh()
        finally:
            await source.aclose()

    async def specs(
        self, record: ToolsetRecord | None, toolset_id: str, name: str, tools: list[RemoteTool]
    ) -> list[RemoteToolSpec]:
        """The scheduler's specs of `tools` (definitions a run recorded) on the toolset's live source; a
        deleted toolset (`record` None) gives specs whose calls fail."""
        if record is None:  # deleted (maybe on another replica): its live source here is closed too
            await self.drop(toolset_id)
            gone = GoneSource(toolset_id, name)
            return await off_loop(self._compile, gone, name, tools, {})
        live = await self._source(record)
        return await off_loop(self._compile, live.source, record.name, tools, live.specs)

    async def drop(self, toolset_id: str) -> None:
        async with self._lock:
            live = self._live.pop(toolset_id, None)
        if live is not None:
            await live.source.aclose()

    async def aclose(self) -> None:
        async with self._lock:
            lives, self._live = list(self._live.values()), {}
        for live in lives:
            try:
                await live.source.aclose()
            except Exception:  # noqa: BLE001 - closing the others matters more
                logger.exception("closing a toolset source failed")

    # -- plumbing ---------------------------------------------------------------------------------

    async def _source(self, record: ToolsetRecord) -> _Live:
        async with self._lock:
            live = self._live.get(record.toolset_id)
            if live is None:
                live = _Live(self.build(record))
                self._live[record.toolset_id] = live
            return live

    def _compile(
        self, source: ToolSource, label: str, tools: list[RemoteTool], cache: dict[str, RemoteToolSpec]
    ) -> list[RemoteToolSpec]:
        specs = []
        for tool in tools:
            spec = cache.get(tool.digest)
            if spec is None:
                spec = remote_tool_spec(source, tool, schema_check=self._schema_check, label=label)
                cache[tool.digest] = spec
            specs.append(spec)
        return specs

    def _secret(self, record: ToolsetRecord) -> SecretValue | None:
        if record.credential is None:
            return None
        return self._sealer.open(
            record.credential, tenant=record.tenant, toolset=record.toolset_id, slot=CREDENTIAL_SLOT
        )

    def _changed(self, record: ToolsetRecord) -> Callable[[ToolSnapshot], Awaitable[None]]:
        async def changed(snapshot: ToolSnapshot) -> None:
            if self.on_listed is not None and record.toolset_id in self._live:
                await self.on_listed(record, snapshot)

        return changed

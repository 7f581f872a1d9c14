"""`ToolsetService`: a tenant's toolsets — register, list, show, refresh, delete — and the toolsets a run
or a plan names.

Registration checks everything before anything is stored: the fields of its kind, the egress policy
(the URL's host resolved now: a refused URL is a 400 here, not a failed run later), the auth scheme;
then it lists the tools (an MCP server's `tools/list`; an OpenAPI document imported, bounded, by the
door) and checks them as the planner and the executors will use them (bounded count and bytes, then
schemas compiled with the RE2-based validator and the planner's catalog rules, by the door). The
door's jobs (serving/toolsets/checks.py) run in its worker processes on the tenant's fair share and
within its deadline, like every other client check. The secret is sealed for this
tenant and toolset at once and never leaves the service again: it is not in any answer, log line or
error message. Every lookup is tenant-scoped: another tenant's toolset is a 404 like an unknown one.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from contract.errors import PlanstackBaseError
from executors.errors import ToolError
from executors.sources.auth import AuthScheme
from executors.sources.credentials import CredentialSealer
from executors.sources.errors import EgressRefused, SourceError
from executors.sources.remote_spec import SchemaCheckFactory
from executors.sources.tool_source import PolicyOverrides, RemoteTool, ToolPolicy, ToolSnapshot
from executors.stores import TenantToolsets, ToolsetExists, ToolsetRecord
from executors.stores.tool_records import TOOLSET_ID_PATTERN
from serving.door import Door
from serving.toolsets.checks import check_definitions, import_document
from serving.toolsets.config import ToolsConfig
from serving.toolsets.connections import CREDENTIAL_SLOT, ToolsetConnections, overrides_of
from serving.toolsets.errors import ToolsetInvalid, ToolsetNotFound, ToolsetUnreachable
from serving.toolsets.openapi_import import OpenApiImport
from serving.toolsets.openapi_load import ImportLimits
from serving.toolsets.protocol import RESERVED, ToolsetCreate

logger = logging.getLogger("planstack.toolsets")
MAX_SKIPPED_SHOWN = 20


class ToolsetService:
    def __init__(
        self,
        store: TenantToolsets,
        connections: ToolsetConnections,
        config: ToolsConfig,
        sealer: CredentialSealer,
        schema_check: SchemaCheckFactory,
        door: Door,
        *,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        self.store = store
        self.door = door
        self.connections = connections
        self.config = config
        self._sealer = sealer
        self._schema_check = schema_check
        self._new_id = new_id or (lambda: "ts_" + uuid.uuid4().hex[:20])
        connections.on_listed = self._listed

    # -- the API ----------------------------------------------------------------------------------

    async def add(self, tenant: str, body: ToolsetCreate) -> ToolsetRecord:
        """Register a toolset (see module doc); nothing is stored unless every check passed."""
        if body.name in RESERVED or re.match(TOOLSET_ID_PATTERN, body.name):
            raise ToolsetInvalid(
                f"{body.name!r} is reserved (a built-in toolset's name, or an id's form)", param="name"
            )
        if await self.store.get_toolset(tenant, body.name) is not None:  # before any slow listing
            raise ToolsetExists(f"a toolset named {body.name!r} exists already", hint="choose another name")
        config = await self._config_of(tenant, body)
        toolset_id = self._new_id()
        credential = None
        secret = body.auth.secret if body.auth is not None else None
        if secret is not None:
            sealed = self._sealer.seal(
                secret.get_secret_value(), tenant=tenant, toolset=toolset_id, slot=CREDENTIAL_SLOT
            )
            credential = sealed.to_text()
        draft = ToolsetRecord(
            toolset_id=toolset_id, tenant=tenant, name=body.name, kind=body.kind, config=config, credential=credential
        )
        if body.kind == "openapi":
            imported = await self._import(tenant, body.document)
            config["title"] = imported.title
            config["skipped"] = list(imported.skipped[:MAX_SKIPPED_SHOWN])
            snapshot = self._openapi_snapshot(toolset_id, imported, overrides_of(draft, self.config))
        else:
            snapshot = await self._list(draft)
        await self._check_tools(tenant, snapshot)
        draft = draft.model_copy(
            update={"tools": [t.model_dump(mode="json") for t in snapshot.tools], "version": snapshot.version}
        )
        record = await self.store.create_toolset(draft, max_per_tenant=self.config.max_toolsets_per_tenant)
        logger.info(
            "tenant %s registered toolset %s (%s, %d tools)", tenant, record.toolset_id, record.kind, len(record.tools)
        )
        return record

    async def list_toolsets(self, tenant: str) -> list[ToolsetRecord]:
        return await self.store.list_toolsets(tenant)

    async def get(self, tenant: str, key: str) -> ToolsetRecord:
        record = await self.store.get_toolset(tenant, key)
        if record is None:
            raise ToolsetNotFound(f"toolset {key!r} not found", param=None)
        return record

    async def refresh(self, tenant: str, key: str) -> ToolsetRecord:
        """List the tools again (an MCP server's may have changed; an OpenAPI toolset's are its import)."""
        record = await self.get(tenant, key)
        snapshot = await self._list(record)
        await self._check_tools(tenant, snapshot)
        updated = await self._save(record, snapshot)
        if updated is None:
            raise ToolsetNotFound(f"toolset {key!r} not found", param=None)
        return updated

    async def delete(self, tenant: str, key: str) -> ToolsetRecord:
        record = await self.store.delete_toolset(tenant, key)
        if record is None:
            raise ToolsetNotFound(f"toolset {key!r} not found", param=None)
        await self.connections.drop(record.toolset_id)
        return record

    async def named(self, tenant: str, names: Iterable[str]) -> list[ToolsetRecord]:
        """The tenant's toolsets of these names or ids, in order (404 `toolset_not_found` for any other)."""
        found = []
        for name in names:
            record = await self.store.get_toolset(tenant, name)
            if record is None:
                raise ToolsetNotFound(f"toolset {name!r} not found", hint="GET /v1/toolsets lists yours")
            found.append(record)
        return found

    # -- registration -------------------------------------------------------------------------------

    async def _config_of(self, tenant: str, body: ToolsetCreate) -> dict[str, Any]:
        """What is stored in clear about how to reach and call the toolset (checked here)."""
        config: dict[str, Any] = {"require_approval": list(body.require_approval)}
        if body.description:
            config["description"] = body.description
        if body.timeout_s is not None:
            if body.timeout_s > self.config.max_timeout_s:
                raise ToolsetInvalid(f"timeout_s is at most {self.config.max_timeout_s:g}", param="timeout_s")
            config["timeout_s"] = body.timeout_s
        auth = body.auth
        try:
            scheme = AuthScheme(kind=auth.kind, header=auth.header, username=auth.username) if auth else AuthScheme()
        except ValueError as exc:
            raise ToolsetInvalid(f"auth: {_first_error(exc)}", param="auth") from None
        if scheme.needs_secret and (auth is None or auth.secret is None):
            raise ToolsetInvalid(f"the {scheme.kind} scheme needs its `secret`", param="auth.secret")
        if not scheme.needs_secret and auth is not None and auth.secret is not None:
            raise ToolsetInvalid("a secret needs an auth scheme (`kind`)", param="auth.kind")
        if auth is not None and auth.secret is not None and any(c in auth.secret.get_secret_value() for c in "\r\n\0"):
            raise ToolsetInvalid("a credential cannot contain line breaks", param="auth.secret")
        config["auth"] = scheme.model_dump(exclude_none=True)
        if body.kind == "mcp":
            if (body.url is None) == (body.server is None):
                raise ToolsetInvalid("an MCP toolset needs exactly one of `url` or `server`", param="url")
            if body.document is not None or body.base_url is not None:
                raise ToolsetInvalid("`document` and `base_url` are for OpenAPI toolsets", param="kind")
            if body.server is not None:
                server = self.config.stdio_servers.get(body.server)
                if server is None or not server.allows(tenant):
                    raise ToolsetInvalid(
                        f"no stdio server {body.server!r} is configured for this tenant",
                        param="server",
                        hint="stdio servers come from the operator's tools.stdio_servers",
                    )
                config["server"] = body.server
            else:
                assert body.url is not None
                await self.connections.check_url(body.url)
                config["url"] = body.url
            return config
        if body.document is None or body.base_url is None:
            raise ToolsetInvalid("an OpenAPI toolset needs `document` and `base_url`", param="document")
        if body.url is not None or body.server is not None:
            raise ToolsetInvalid("`url` and `server` are for MCP toolsets", param="kind")
        await self.connections.check_url(body.base_url)
        config["base_url"] = body.base_url
        return config

    async def _import(self, tenant: str, document: str | dict[str, Any] | None) -> OpenApiImport:
        """The document imported by the door (its text written there too: a megabyte of JSON objects is
        tens of milliseconds of `json.dumps`, not the event loop's to spend)."""
        limits = ImportLimits(
            max_bytes=self.config.max_document_bytes, max_operations=self.config.max_tools_per_toolset
        )
        return await self.door.run(tenant, import_document, document or "", limits, inline=False)

    def _openapi_snapshot(self, toolset_id: str, imported: OpenApiImport, overrides: PolicyOverrides) -> ToolSnapshot:
        tools = []
        for item in imported.tools:
            function = item.tool["function"]
            name = str(function["name"])
            # Every operation may be retried: GET/PUT/DELETE as they are, POST/PATCH only with the
            # Idempotency-Key of their (run, round, node); the HTTP caller decides per call.
            policy = overrides.apply(name, ToolPolicy(retryable=True, timeout_s=self.config.default_timeout_s))
            tools.append(
                RemoteTool(
                    name=name,
                    remote_name=item.binding.operation_id or name,
                    description=str(function.get("description") or name)[:1000],
                    parameters=function.get("parameters") or {"type": "object", "properties": {}},
                    output_schema=function.get("output_schema"),
                    policy=policy,
                    binding=item.binding,
                )
            )
        return ToolSnapshot(source_id=toolset_id, tools=tuple(tools))

    async def _list(self, record: ToolsetRecord) -> ToolSnapshot:
        """The source's tools now; what stops a listing becomes a 4xx (refused) or a 502 (unreachable)."""
        try:
            return await self.connections.listed(record)
        except EgressRefused:
            raise
        except SourceError as exc:
            raise ToolsetInvalid(f"the toolset cannot be used: {exc.message}") from None
        except ToolError as exc:
            if exc.kind in ("redirect_refused", "response_too_large"):
                raise ToolsetInvalid(f"listing the tools failed: {exc.message}", code=exc.kind) from None
            raise ToolsetUnreachable(f"listing the tools failed: {exc.message}") from None
        except PlanstackBaseError:
            raise
        except Exception as exc:  # a transport's own error
            raise ToolsetUnreachable(f"listing the tools failed ({type(exc).__name__})") from None

    async def _check_tools(self, tenant: str, snapshot: ToolSnapshot) -> None:
        """The tools as the planner and the executors will take them: bounded here, checked by the door."""
        if len(snapshot.tools) > self.config.max_tools_per_toolset:
            raise ToolsetInvalid(
                f"the toolset lists {len(snapshot.tools)} tools; the limit is {self.config.max_tools_per_toolset}"
            )
        limit = self.config.max_toolset_bytes
        await self.door.run(tenant, check_definitions, snapshot.tools, self._schema_check, limit, inline=False)

    async def _save(self, record: ToolsetRecord, snapshot: ToolSnapshot) -> ToolsetRecord | None:
        tools = [tool.model_dump(mode="json") for tool in snapshot.tools]
        return await self.store.update_toolset_tools(record.tenant, record.toolset_id, tools, snapshot.version)

    async def _listed(self, record: ToolsetRecord, snapshot: ToolSnapshot) -> None:
        """`tools/list_changed` (or a reconnect): keep the new definitions when the planner can take them."""
        try:
            await self._check_tools(record.tenant, snapshot)
        except PlanstackBaseError as exc:
            logger.warning("toolset %s: the changed tool list is not used: %s", record.toolset_id, exc.message)
            return
        updated = await self._save(record, snapshot)
        if updated is not None and updated.revision != record.revision:
            logger.info("toolset %s: tools changed (revision %d)", record.toolset_id, updated.revision)


def _first_error(exc: ValueError) -> str:
    text = str(exc)
    return text.splitlines()[-1] if "\n" in text else text

"""`TenantToolsets` in SQL: each tenant's toolsets with their last tool snapshot (written once, both dialects).

A toolset is found by its id or its name, always within its tenant: another tenant's toolset does not
exist for this one. Creating one checks the tenant's count and the name's uniqueness under the
tenant's toolset lock, so replicas creating at once cannot exceed the cap or share a name.
"""

from __future__ import annotations

from typing import Any

from executors.stores.errors import ToolsetExists, TooManyToolsets
from executors.stores.records import dumps
from executors.stores.sql.dialect import Lock, Program, Statement
from executors.stores.sql.part import SqlPart
from executors.stores.sql.rows import loads
from executors.stores.tool_records import ToolsetRecord

COLUMNS = (
    "toolset_id, tenant, name, kind, config_json, credential, tools_json, version, revision,"
    " created_at, updated_at, refreshed_at"
)
BY_KEY = "tenant = :tenant AND (toolset_id = :key OR name = :key)"


def _lock(tenant: str) -> Lock:
    return Lock("toolsets:" + tenant)


def toolset_from_row(row: Any) -> ToolsetRecord:
    return ToolsetRecord(
        toolset_id=row[0],
        tenant=row[1],
        name=row[2],
        kind=row[3],
        config=loads(row[4]) or {},
        credential=row[5],
        tools=loads(row[6]) or [],
        version=row[7],
        revision=row[8],
        created_at=row[9],
        updated_at=row[10],
        refreshed_at=row[11],
    )


def _create(record: ToolsetRecord, max_per_tenant: int) -> Program[ToolsetRecord]:
    yield _lock(record.tenant)
    taken = (
        yield Statement(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN name = :name THEN 1 ELSE 0 END), 0) FROM toolsets"
            " WHERE tenant = :tenant",
            {"tenant": record.tenant, "name": record.name},
        )
    ).one()
    if int(taken[1]):
        raise ToolsetExists(f"a toolset named {record.name!r} exists already", hint="choose another name")
    if int(taken[0]) >= max_per_tenant:
        raise TooManyToolsets(
            f"this tenant has {int(taken[0])} toolsets; the limit is {max_per_tenant}", hint="delete one first"
        )
    row = (
        yield Statement(
            f"INSERT INTO toolsets ({COLUMNS}) VALUES (:toolset_id, :tenant, :name, :kind, :config_json,"
            " :credential, :tools_json, :version, 1, :now, :now, :now)"
            f" RETURNING {COLUMNS}",
            {
                "toolset_id": record.toolset_id,
                "tenant": record.tenant,
                "name": record.name,
                "kind": record.kind,
                "config_json": dumps(record.config),
                "credential": record.credential,
                "tools_json": dumps(record.tools),
                "version": record.version,
            },
        )
    ).one()
    return toolset_from_row(row)


def _get(tenant: str, key: str) -> Program[ToolsetRecord | None]:
    row = (yield Statement(f"SELECT {COLUMNS} FROM toolsets WHERE {BY_KEY}", {"tenant": tenant, "key": key})).first()
    return None if row is None else toolset_from_row(row)


def _list(tenant: str) -> Program[list[ToolsetRecord]]:
    rows = yield Statement(f"SELECT {COLUMNS} FROM toolsets WHERE tenant = :tenant ORDER BY name", {"tenant": tenant})
    return [toolset_from_row(row) for row in rows.rows]


def _update_tools(
    tenant: str, toolset_id: str, tools: list[dict[str, Any]], version: str
) -> Program[ToolsetRecord | None]:
    row = (
        yield Statement(
            "UPDATE toolsets SET tools_json = :tools_json, refreshed_at = :now,"
            " revision = revision + CASE WHEN version = :version THEN 0 ELSE 1 END,"
            " updated_at = CASE WHEN version = :version THEN updated_at ELSE :now END, version = :version"
            f" WHERE tenant = :tenant AND toolset_id = :toolset_id RETURNING {COLUMNS}",
            {"tenant": tenant, "toolset_id": toolset_id, "tools_json": dumps(tools), "version": version},
        )
    ).first()
    return None if row is None else toolset_from_row(row)


def _delete(tenant: str, key: str) -> Program[ToolsetRecord | None]:
    yield _lock(tenant)
    row = (yield Statement(f"SELECT {COLUMNS} FROM toolsets WHERE {BY_KEY}", {"tenant": tenant, "key": key})).first()
    if row is None:
        return None
    yield Statement("DELETE FROM toolsets WHERE toolset_id = :toolset_id", {"toolset_id": row[0]})
    return toolset_from_row(row)


class SqlToolsets(SqlPart):
    async def create_toolset(self, record: ToolsetRecord, *, max_per_tenant: int) -> ToolsetRecord:
        return await self.db.write(_create(record, max_per_tenant))

    async def get_toolset(self, tenant: str, key: str) -> ToolsetRecord | None:
        return await self.db.read(_get(tenant, key))

    async def list_toolsets(self, tenant: str) -> list[ToolsetRecord]:
        return await self.db.read(_list(tenant))

    async def update_toolset_tools(
        self, tenant: str, toolset_id: str, tools: list[dict[str, Any]], version: str
    ) -> ToolsetRecord | None:
        return await self.db.write(_update_tools(tenant, toolset_id, tools, version))

    async def delete_toolset(self, tenant: str, key: str) -> ToolsetRecord | None:
        return await self.db.write(_delete(tenant, key))

"""`TenantCache` in SQL: a key-value cache with TTL, scoped by namespace and tenant (written once)."""

from __future__ import annotations

from executors.stores.base import check_cache_entry
from executors.stores.sql.dialect import Program, Statement
from executors.stores.sql.part import SqlPart


def _get(namespace: str, tenant: str, key: str) -> Program[str | None]:
    row = (
        yield Statement(
            "SELECT value FROM cache WHERE namespace = :namespace AND tenant = :tenant AND key = :key"
            " AND expires_at > :now",
            {"namespace": namespace, "tenant": tenant, "key": key},
        )
    ).first()
    return None if row is None else str(row[0])


def _put(namespace: str, tenant: str, key: str, value: str, ttl_s: float) -> Program[None]:
    yield Statement(
        "INSERT INTO cache (namespace, tenant, key, value, expires_at)"
        " VALUES (:namespace, :tenant, :key, :value, :now + :ttl_s)"
        " ON CONFLICT (namespace, tenant, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
        {"namespace": namespace, "tenant": tenant, "key": key, "value": value, "ttl_s": ttl_s},
    )


class SqlCache(SqlPart):
    async def cache_get(self, namespace: str, tenant: str, key: str) -> str | None:
        check_cache_entry(namespace, tenant, key)
        return await self.db.read(_get(namespace, tenant, key))

    async def cache_put(self, namespace: str, tenant: str, key: str, value: str, ttl_s: float) -> None:
        check_cache_entry(namespace, tenant, key, value, ttl_s)
        await self.db.write(_put(namespace, tenant, key, value, ttl_s))

"""`TenantCache` in SQL: a key-value cache with TTL, scoped by namespace and tenant (written once).

Each entry records its size (`bytes`) and when it was stored: the entries count toward their
tenant's stored bytes and the retention total, and a put with a quota is refused (`StoredBytesQuota`)
once the tenant keeps its cap. No entry outlives `runs.retention_max_age_s`.
"""

from __future__ import annotations

from executors.stores.base import check_cache_entry
from executors.stores.caps import stored_bytes_error
from executors.stores.records import TenantQuota
from executors.stores.sql.dialect import Lock, Program, Statement
from executors.stores.sql.part import SqlPart
from executors.stores.sql.retention import usage_of
from executors.stores.sql.rows import text_bytes


def _get(namespace: str, tenant: str, key: str) -> Program[str | None]:
    row = (
        yield Statement(
            "SELECT value FROM cache WHERE namespace = :namespace AND tenant = :tenant AND key = :key"
            " AND expires_at > :now",
            {"namespace": namespace, "tenant": tenant, "key": key},
        )
    ).first()
    return None if row is None else str(row[0])


def _put(namespace: str, tenant: str, key: str, value: str, ttl_s: float, quota: TenantQuota | None) -> Program[None]:
    if quota is not None:  # the check and the write are one step for all replicas (as a run's creation)
        yield Lock(tenant)
        problem = stored_bytes_error((yield from usage_of(tenant)), quota)
        if problem is not None:
            raise problem
    size = sum(text_bytes(text) for text in (namespace, tenant, key, value))
    yield Statement(
        "INSERT INTO cache (namespace, tenant, key, value, expires_at, bytes, stored_at)"
        " VALUES (:namespace, :tenant, :key, :value, :now + :ttl_s, :bytes, :now)"
        " ON CONFLICT (namespace, tenant, key) DO UPDATE SET value = excluded.value,"
        " expires_at = excluded.expires_at, bytes = excluded.bytes, stored_at = excluded.stored_at",
        {"namespace": namespace, "tenant": tenant, "key": key, "value": value, "ttl_s": ttl_s, "bytes": size},
    )


class SqlCache(SqlPart):
    async def cache_get(self, namespace: str, tenant: str, key: str) -> str | None:
        check_cache_entry(namespace, tenant, key)
        return await self.db.read(_get(namespace, tenant, key))

    async def cache_put(
        self, namespace: str, tenant: str, key: str, value: str, ttl_s: float, *, quota: TenantQuota | None = None
    ) -> None:
        check_cache_entry(namespace, tenant, key, value, ttl_s)
        ttl_s = min(ttl_s, self.config.retention_max_age_s)
        await self.db.write(_put(namespace, tenant, key, value, ttl_s, quota))

"""The checks at the door of every request: bounded before they work, off the event loop past a small
size, on the tenant's fair share of the door's workers, verdicts on catalogs reused.

- `parse`: a request body into its model. A body up to `door.inline_bytes` is decoded on the event
  loop (64 KiB decode in about 1–4 ms); a larger one in a worker (a 1 MiB body of small keys took
  70 ms of `json.loads`).
- `catalog`: client tools into a validated `ToolCatalog`. Verdicts (the catalog, or its refusal) are
  kept by content digest per tenant (`CatalogCache`), so a client that sends the same 128 tools on
  every call pays the JSON-Schema validation once; a miss runs in a worker unless the definitions are
  tiny and hold no pattern.
- `plan_problem`: a client plan through the planner's validation layers, in a worker when large.

Everything the workers run is bounded first (contract/plan.py, planner/catalog.py,
planner/safe_regex.py); the pool (serving/door/pool.py) adds the per-tenant share and the deadline.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any, TypeVar

from contract.plan import Plan
from planner.catalog import CatalogCache, CatalogError, ToolCatalog, packed_tools
from planner.validation import PlanValidator
from serving.door.bodies import ModelT, parse_body
from serving.door.jobs import build_catalog, plan_problem
from serving.door.pool import DoorPool
from serving.settings import DoorSettings

T = TypeVar("T")
INLINE_CATALOG_BYTES = 4096  # pickled definitions checked on the event loop: ~1 small tool, well under 10 ms
INLINE_PLAN_BYTES = 8192  # pickled client plans validated on the event loop


def checks_inline(packed: bytes) -> bool:
    """Are definitions (their pickled or JSON bytes) small and pattern-free enough to be checked on the
    event loop? A few KiB of schemas without regexes compile in well under 10 ms."""
    return len(packed) <= INLINE_CATALOG_BYTES and b"pattern" not in packed


class Door:
    def __init__(self, settings: DoorSettings, pool: DoorPool, catalogs: CatalogCache | None = None) -> None:
        self.settings = settings
        self.pool = pool
        self.catalogs = catalogs or CatalogCache(
            max_entries=settings.catalog_cache_size,
            max_bytes=settings.catalog_cache_mib << 20,
            max_scope_bytes=settings.catalog_cache_tenant_mib << 20,
        )

    async def run(self, tenant: str, function: Callable[..., T], *args: Any, inline: bool) -> T:
        """`function(*args)`: here when `inline` (a small input), else in a worker on `tenant`'s share."""
        if inline:
            self.pool.count("inline")
            return function(*args)
        return await self.pool.run(tenant, function, *args)

    async def parse(self, model: type[ModelT], body: bytes, *, tenant: str) -> ModelT:
        return await self.run(tenant, parse_body, model, body, inline=len(body) <= self.settings.inline_bytes)

    async def catalog(self, tools: Any, *, tenant: str) -> ToolCatalog:
        """The validated catalog of `tools` (CatalogError otherwise), checked once per content and tenant."""
        if isinstance(tools, ToolCatalog):
            return tools
        packed, digest = packed_tools(tools)
        verdict = self.catalogs.get(tenant, digest)
        if verdict is None:
            self.pool.count("catalog_miss")
            cheap = checks_inline(packed)
            try:
                verdict = await self.run(tenant, build_catalog, packed, inline=cheap)
            except CatalogError as exc:
                verdict = exc
            self.catalogs.put(tenant, digest, verdict, len(packed))
        else:
            self.pool.count("catalog_hit")
        if isinstance(verdict, CatalogError):
            raise CatalogError(verdict.problems)  # a fresh exception each time (no traceback growing)
        return verdict

    async def plan_problem(self, validator: PlanValidator, plan: Plan | dict[str, Any], *, tenant: str) -> str | None:
        """What the validation layers find wrong with a client plan (None: valid)."""
        size = len(pickle.dumps(plan, protocol=5))
        return await self.run(tenant, plan_problem, validator, plan, inline=size <= INLINE_PLAN_BYTES)

    def close(self) -> None:
        self.pool.close()

"""Issue 19, item 3: a catalog already checked is not checked again. Verdicts (the catalog, or its
refusal) are kept by content digest per tenant: the same tools on every call cost one validation, and
another tenant's identical tools are checked afresh (a shared verdict would tell it, by its speed, that
someone else had sent them)."""

from __future__ import annotations

import asyncio
import copy

import pytest

from planner.catalog import CatalogCache, CatalogError, ToolCatalog, packed_tools
from serving.door import Door, DoorPool
from serving.metrics import GatewayMetrics
from serving.settings import DoorSettings
from tests.reliability.door_helpers import pattern_tool, ref_bomb, valid_catalog

pytestmark = pytest.mark.timeout(300)


def count(metrics: GatewayMetrics, outcome: str) -> float:
    return metrics.door_checks.labels(outcome)._value.get()  # type: ignore[attr-defined, no-any-return]


def test_the_same_catalog_is_validated_once_per_tenant() -> None:
    async def scenario() -> None:
        metrics = GatewayMetrics()
        door = Door(DoorSettings(workers=1, nice=0), DoorPool(DoorSettings(workers=1, nice=0), metrics))
        try:
            tools = valid_catalog("reuse", tools=16)  # ~100 KB: checked in a worker
            first = await door.catalog(tools, tenant="A")
            again = await door.catalog(copy.deepcopy(tools), tenant="A")  # equal content, new objects
            assert again is first and isinstance(first, ToolCatalog) and len(first) == 16
            assert (count(metrics, "catalog_miss"), count(metrics, "catalog_hit"), count(metrics, "pool")) == (1, 1, 1)
            other = await door.catalog(tools, tenant="B")
            assert other is not first and count(metrics, "catalog_miss") == 2
            hostile = [ref_bomb(5), pattern_tool(3, 2)]
            for _ in range(2):  # refusals are verdicts too: the bomb is expanded once
                with pytest.raises(CatalogError, match=r"\$ref"):
                    await door.catalog(copy.deepcopy(hostile), tenant="A")
            assert count(metrics, "catalog_miss") == 3 and count(metrics, "catalog_hit") == 2
        finally:
            door.close()

    asyncio.run(scenario())


def test_the_cache_is_bounded_in_entries_and_bytes() -> None:
    cache = CatalogCache(max_entries=2, max_bytes=1000)
    catalog = ToolCatalog.from_openai(valid_catalog("b", tools=1))
    for key in ("x", "y", "z"):
        cache.put("A", key, catalog, 100)
    assert len(cache) == 2 and cache.get("A", "x") is None and cache.get("A", "z") is catalog
    cache.put("A", "big", catalog, 900)
    assert cache.get("A", "y") is None and cache.get("A", "big") is catalog  # 1,100 bytes: the oldest went
    cache.put("A", "huge", catalog, 2000)
    assert cache.get("A", "huge") is None  # larger than the whole budget: never kept


def test_the_digest_follows_the_content_and_the_argument_order() -> None:
    tools = valid_catalog("d", tools=2)
    assert packed_tools(tools)[1] == packed_tools(copy.deepcopy(tools))[1]
    reordered = copy.deepcopy(tools)
    props = reordered[0]["function"]["parameters"]["properties"]
    reordered[0]["function"]["parameters"]["properties"] = dict(reversed(list(props.items())))
    assert packed_tools(reordered)[1] != packed_tools(tools)[1]  # argument order is generation order

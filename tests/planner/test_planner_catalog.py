from __future__ import annotations

import copy

import pytest

from planner.catalog import CatalogError, ToolCatalog
from tests.planner.helpers import DEMO_TOOLS


def tool(name: str = "t", params: object = None, **function: object) -> dict[str, object]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": "d",
            "parameters": params or {"type": "object", "properties": {}},
            **function,
        },
    }


def test_demo_catalog_loads_with_output_fields() -> None:
    catalog = ToolCatalog.from_openai(DEMO_TOOLS)
    assert "search_flights" in catalog and len(catalog) == 9
    assert ("cheapest.price", "number") in catalog.get("search_flights").output_fields
    assert catalog.get("search_hotels").arg_names()[:3] == ("city", "check_in", "check_out")


def test_hash_is_stable_and_content_sensitive() -> None:
    a, b = ToolCatalog.from_openai(DEMO_TOOLS), ToolCatalog.from_openai(copy.deepcopy(DEMO_TOOLS))
    assert a.hash == b.hash
    changed = copy.deepcopy(DEMO_TOOLS)
    changed[0]["function"]["description"] = "other"
    assert ToolCatalog.from_openai(changed).hash != a.hash


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([], "non-empty"),
        ([{"type": "code"}], "expected"),
        ([tool("1bad")], "must match"),
        ([tool("a b")], "must match"),
        ([tool("t"), tool("t")], "duplicate"),
        ([tool(params={"type": "array"})], "type object"),
        ([tool(params={"type": "object", "properties": {"bad-name": {"type": "string"}}})], "argument name"),
        ([tool(params={"type": "object", "properties": {}, "required": ["x"]})], "not in properties"),
        ([tool(params={"type": "object", "properties": {"x": {"type": "nope"}}})], "not a valid JSON Schema"),
        ([tool(params={"type": "object", "properties": {"x": {"$ref": "http://x/y"}}})], "$ref"),
        ([tool(params={"type": "object", "properties": {"x": {"enum": list(range(500))}}})], "enum"),
        ([tool(extra_key=1)], "unknown keys"),
    ],
)
def test_bad_tools_are_rejected_with_a_clear_message(tools: list[dict[str, object]], message: str) -> None:
    with pytest.raises(CatalogError) as info:
        ToolCatalog.from_openai(tools)
    assert message in str(info.value)


def test_deep_schema_is_rejected() -> None:
    deep: dict[str, object] = {"type": "string"}
    for _ in range(8):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(CatalogError, match="levels deep"):
        ToolCatalog.from_openai([tool(params={"type": "object", "properties": {"x": deep}})])


def test_local_refs_are_inlined() -> None:
    params = {"$defs": {"J": {"type": "integer"}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/J"}}}
    catalog = ToolCatalog.from_openai([tool(params=params)])
    assert catalog.get("t").properties["x"] == {"type": "integer"}

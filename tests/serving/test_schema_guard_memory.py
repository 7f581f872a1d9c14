"""The schema guard bounds the grammar memory client schemas can hold in the engine, and checks the
text the engine will compile.

The guard's real compile worker (outlines over the served model's vocabulary, in its own process);
no engine and no gateway: what is under test is the guard's verdict."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from serving.errors import SchemaTooComplexError
from serving.metrics import GatewayMetrics
from serving.schema_guard import CompileWorker, SchemaGuard
from serving.settings import SchemaGuardSettings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def worker(prepared_model_dir: Path) -> Iterator[CompileWorker]:
    started = CompileWorker(prepared_model_dir, "outlines")
    yield started
    started.close()


def guard_with(worker: CompileWorker, **limits: Any) -> tuple[SchemaGuard, GatewayMetrics]:
    metrics = GatewayMetrics()
    settings = SchemaGuardSettings(compile_timeout_s=60, **limits)
    return SchemaGuard(settings, "outlines", metrics, worker), metrics


def bounded(tag: str, max_length: int = 40) -> dict[str, Any]:
    """One bounded string field: about 10 MB of outlines index at maxLength 40 (unbounded: 0.3 MB)."""
    return {"type": "object", "properties": {tag: {"type": "string", "maxLength": max_length}}, "required": [tag]}


def outcome(metrics: GatewayMetrics, name: str) -> float:
    value = metrics.registry.get_sample_value("planstack_schema_checks_total", {"outcome": name})
    return value or 0.0


def test_a_schema_whose_index_is_too_large_is_refused(worker: CompileWorker) -> None:
    guard, metrics = guard_with(worker, max_index_mib=16)
    asyncio.run(guard.check({"type": "object", "properties": {"q": {"type": "string"}}}, tenant="a"))
    with pytest.raises(SchemaTooComplexError, match=r"grammar index is 2\d\.\d MiB.*limit is 16 MiB"):
        asyncio.run(guard.check({"type": "object"}, tenant="a"))  # any JSON object: ~25 MB serialised
    with pytest.raises(SchemaTooComplexError):  # the verdict is cached: no second compile
        asyncio.run(guard.check({"type": "object"}, tenant="a"))
    assert outcome(metrics, "ok") == 2 and outcome(metrics, "cached") == 1


def test_one_tenant_cannot_fill_the_engines_grammar_memory(worker: CompileWorker) -> None:
    guard, metrics = guard_with(worker, tenant_index_budget_mib=25, index_budget_mib=40)
    for tag in ("a1", "a2"):
        asyncio.run(guard.check(bounded(tag), tenant="a"))
    with pytest.raises(SchemaTooComplexError, match="this tenant's recent schemas"):
        asyncio.run(guard.check(bounded("a3"), tenant="a"))
    asyncio.run(guard.check(bounded("a1"), tenant="a"))  # already held: no new memory
    asyncio.run(guard.check({"type": "object", "properties": {"q": {"type": "string"}}}, tenant="a"))  # light
    asyncio.run(guard.check(bounded("b1"), tenant="b"))  # another tenant still has room
    with pytest.raises(SchemaTooComplexError, match="the recent schemas would hold"):
        asyncio.run(guard.check(bounded("b2"), tenant="b"))  # the whole budget is spent
    assert guard.index_usage() > 25 * 2**20 and outcome(metrics, "index_budget") == 2


def test_property_order_is_part_of_the_grammar(worker: CompileWorker) -> None:
    """vLLM compiles json.dumps of the request's schema: keys in the client's order (generation order).
    The same properties in another order are another grammar and get their own compile check."""
    guard, metrics = guard_with(worker)
    first = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}}}
    second = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    asyncio.run(guard.check(first, tenant="a"))
    asyncio.run(guard.check(second, tenant="a"))
    assert outcome(metrics, "ok") == 2 and outcome(metrics, "cached") == 0

"""The gateway in front of the REAL vLLM engine (marker `engine`), called with the official openai client."""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable

import httpx
import jsonschema
import openai
import pytest

from tests.conftest import KEY_A, KEY_B, RunningGateway

pytestmark = pytest.mark.engine

TRIP_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Paris", "Rome", "Tokyo"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}


def sdk(gateway: RunningGateway, key: str = KEY_A) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0, timeout=180)


def test_chat_completion_with_the_openai_client(
    gateway_factory: Callable[..., RunningGateway], engine_model: str
) -> None:
    client = sdk(gateway_factory())
    assert [model.id for model in client.models.list().data] == [engine_model, "planner", "all-minilm-l6-v2"]
    reply = client.chat.completions.create(
        model=engine_model, messages=[{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0
    )
    assert reply.choices[0].message.content
    assert reply.usage is not None and 0 < reply.usage.completion_tokens <= 8


def test_streamed_chat_completion(gateway_factory: Callable[..., RunningGateway], engine_model: str) -> None:
    client = sdk(gateway_factory())
    stream = client.chat.completions.create(
        model=engine_model,
        messages=[{"role": "user", "content": "Count to three."}],
        max_tokens=8,
        temperature=0,
        stream=True,
    )
    pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
    assert len(pieces) >= 2 and "".join(pieces).strip()


def test_response_format_json_schema_output_parses_and_validates(
    gateway_factory: Callable[..., RunningGateway], engine_model: str
) -> None:
    client = sdk(gateway_factory())
    reply = client.chat.completions.create(
        model=engine_model,
        messages=[{"role": "user", "content": "A three day trip to Rome. Answer as JSON with city and days."}],
        response_format={"type": "json_schema", "json_schema": {"name": "trip", "schema": TRIP_SCHEMA}},
        max_tokens=40,
        temperature=0,
    )
    content = reply.choices[0].message.content
    assert content is not None
    jsonschema.validate(json.loads(content), TRIP_SCHEMA)


# ---- prefix-cache isolation, read from the engine's own counters --------------------------------
_COUNTER = re.compile(r"^vllm:prefix_cache_(queries|hits)_total\{[^}]*\} ([0-9.e+]+)$", re.MULTILINE)


def prefix_counters(engine_url: str, headers: dict[str, str]) -> dict[str, float]:
    totals = {"queries": 0.0, "hits": 0.0}
    for name, value in _COUNTER.findall(httpx.get(f"{engine_url}/metrics", headers=headers, timeout=10).text):
        totals[name] += float(value)
    return totals


def cache_hits(
    gateway: RunningGateway, engine_url: str, engine_model: str, key: str, system: str
) -> tuple[int, float | None]:
    """Send one request through the gateway; the prefix-cache hits it caused, as the engine reports them.

    Returns (cached prompt tokens from the engine's per-request usage, the delta of the engine's
    `vllm:prefix_cache_hits_total` counter). The counter delta is None when the engine is shared with
    other clients (PLANSTACK_TEST_ENGINE_URL), since their traffic would show up in it too.
    """
    key_setting = gateway.settings.engine.api_key  # the engine's /metrics needs its key too
    engine_headers = {"Authorization": f"Bearer {key_setting.get_secret_value()}"} if key_setting else {}
    before = prefix_counters(engine_url, engine_headers)
    with gateway.client(key) as client:
        body = {
            "model": engine_model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "Which city?"}],
            "max_tokens": 1,
        }
        response = client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
    cached = int((response.json()["usage"].get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    if os.environ.get("PLANSTACK_TEST_ENGINE_URL"):
        return cached, None
    deadline = time.monotonic() + 10  # the engine publishes its counters just after the response
    while (after := prefix_counters(engine_url, engine_headers))["queries"] == before["queries"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert after["queries"] > before["queries"], "the engine did not report the request's prefix-cache query"
    return cached, after["hits"] - before["hits"]


def long_system_prompt() -> str:
    nonce = uuid.uuid4().hex  # a prefix no earlier request can have cached
    rule = "Rule {}: travel requests about city {} must be answered politely and briefly."
    rules = " ".join(rule.format(i, i) for i in range(60))
    return f"[{nonce}] You are a travel planner. {rules}"


def test_tenant_scope_shares_the_prefix_cache_within_a_tenant_only(
    gateway_factory: Callable[..., RunningGateway], engine_url: str, engine_model: str
) -> None:
    gateway = gateway_factory(isolation={"scope": "tenant"})
    system = long_system_prompt()
    first_a = cache_hits(gateway, engine_url, engine_model, KEY_A, system)
    second_a = cache_hits(gateway, engine_url, engine_model, KEY_A, system)
    first_b = cache_hits(gateway, engine_url, engine_model, KEY_B, system)
    assert first_a[0] == 0 and first_a[1] in (0, None)
    # the same tenant's identical prefix is served from the cache …
    assert second_a[0] > 0 and (second_a[1] is None or second_a[1] > 0)
    # … and another tenant's identical prefix never hits the first tenant's blocks.
    assert first_b[0] == 0 and first_b[1] in (0, None)


def test_request_scope_never_reuses_the_prefix_cache(
    gateway_factory: Callable[..., RunningGateway], engine_url: str, engine_model: str
) -> None:
    gateway = gateway_factory(isolation={"scope": "request"})
    system = long_system_prompt()
    for key in (KEY_A, KEY_A, KEY_B):
        cached, counter_delta = cache_hits(gateway, engine_url, engine_model, key, system)
        assert cached == 0 and counter_delta in (0, None)


# ---- schemas that would take the engine down ----------------------------------------------------
def exploding_schema(variant: int) -> dict[str, object]:
    """A naive plan schema: ≤ 6 nodes, anyOf one object per tool, strings maxLength 40 (under outlines
    on a 2-core CPU its compile outruns vLLM's 5 s regex timeout)."""
    tools = [f"tool_{variant}_{i}" for i in range(8)]
    node_variants = [
        {
            "type": "object",
            "properties": {
                "id": {"type": "string", "maxLength": 40},
                "tool": {"const": tool},
                "args": {
                    "type": "object",
                    "properties": {f"arg{j}": {"type": "string", "maxLength": 40} for j in range(3)},
                    "required": [f"arg{j}" for j in range(3)],
                },
            },
            "required": ["id", "tool", "args"],
        }
        for tool in tools
    ]
    return {
        "type": "object",
        "properties": {"nodes": {"type": "array", "maxItems": 6, "items": {"anyOf": node_variants}}},
        "required": ["nodes"],
    }


def test_schemas_too_complex_to_compile_get_400_and_the_engine_survives(
    gateway_factory: Callable[..., RunningGateway], engine_url: str, engine_model: str
) -> None:
    gateway = gateway_factory()
    with gateway.client() as client:
        for attempt in range(6):  # three distinct schemas, each sent twice (the repeat is answered from cache)
            body = {
                "model": engine_model,
                "messages": [{"role": "user", "content": "plan"}],
                "max_tokens": 5,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "plan", "schema": exploding_schema(attempt // 2)},
                },
            }
            started = time.monotonic()
            response = client.post("/v1/chat/completions", json=body)
            assert response.status_code == 400, response.text
            assert response.json()["error"]["code"] == "schema_too_complex"
            assert time.monotonic() - started < 60
        assert httpx.get(f"{engine_url}/health", timeout=10).status_code == 200
        ok = client.post(
            "/v1/chat/completions",
            json={"model": engine_model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3},
        )
        assert ok.status_code == 200
        metrics = client.get("/metrics").text
    assert 'planstack_schema_checks_total{outcome="timeout"} 3.0' in metrics
    assert 'planstack_schema_checks_total{outcome="cached"} 3.0' in metrics


# ---- the planner and runs through the gateway ----------------------------------------------------
TRIP_REQUEST = "Find flights from Shanghai to Hangzhou on 2027-06-20 and the weather in Hangzhou that day."
DEMO_TOOLS = {"search_flights", "search_hotels", "get_weather", "search_venues", "quote_catering", "check_budget",
              "convert_currency", "lookup_knowledge", "review_result"}  # fmt: skip


def test_plans_endpoint_planner_model_and_tenant_scoped_plan_cache(
    gateway_factory: Callable[..., RunningGateway],
) -> None:
    gateway = gateway_factory()
    request = f"{TRIP_REQUEST} (ref {uuid.uuid4().hex[:6]})"  # not cached by an earlier test
    with gateway.client() as client:
        detail = client.post("/v1/plans", json={"request": request}).json()
    assert detail["path"] in {"model", "model_retry", "fallback"}
    assert detail["validation"]["ok"] is True
    assert {node["tool"] for node in detail["plan"]["nodes"]} <= DEMO_TOOLS
    if detail["path"] == "fallback":  # the model's failed attempts are reported, never hidden
        assert detail["fallback_reason"] and detail["attempts"]
    # The same request as the `planner` chat model, with the openai client: tenant A may be served
    # from its plan cache (only model-made plans are cached); tenant B never sees A's cache.
    reply_a = sdk(gateway, KEY_A).chat.completions.create(model="planner", messages=[{"role": "user", "content": request}])
    reply_b = sdk(gateway, KEY_B).chat.completions.create(model="planner", messages=[{"role": "user", "content": request}])
    path_a = reply_a.model_extra["planstack"]["path"]  # type: ignore[index]
    path_b = reply_b.model_extra["planstack"]["path"]  # type: ignore[index]
    assert path_a == ("cache" if detail["path"] != "fallback" else "fallback")
    assert path_b != "cache"
    for reply in (reply_a, reply_b):
        plan = json.loads(reply.choices[0].message.content or "")
        assert plan["nodes"] and {node["tool"] for node in plan["nodes"]} <= DEMO_TOOLS
    with gateway.client() as client:
        metrics = client.get("/metrics").text
    assert 'planstack_plan_cache_total{outcome="hit"}' in metrics or detail["path"] == "fallback"


def test_planned_run_executes_end_to_end(gateway_factory: Callable[..., RunningGateway]) -> None:
    gateway = gateway_factory()
    with gateway.client() as client:
        response = client.post("/v1/runs", json={"request": TRIP_REQUEST, "wait": True})
    assert response.status_code == 200, response.text
    run = response.json()
    assert run["planner"]["path"] in {"model", "model_retry", "fallback", "cache"}
    assert run["status"] == "succeeded", run.get("error")
    assert run["nodes"] and all(node["status"] == "succeeded" for node in run["nodes"])

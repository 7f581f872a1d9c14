"""Two REAL vLLM engines behind vllm-router (configs/deploy/router.yaml) behind a real gateway.

- placement: each tenant's requests land on one engine, seen from the engines' own /metrics
  (request and prefix-cache-hit counters), and tenants use both engines;
- failover: the engine serving a tenant is SIGKILLed while a stream is in flight; the tenant's next
  requests are answered by the other engine with no error (only the in-flight one may fail).

The two engines are the session's own and the session's spare (tests/conftest.py `spare_engine`, the
one the failover kills), both with the session's engine key; the router forwards the gateway's key.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from serving.engine.process import engine_headers
from tests.conftest import SpareEngine
from tests.deploy.conftest import TENANTS, RoutedGateway

pytestmark = [pytest.mark.engine, pytest.mark.multi_engine]

CHAT = "/v1/chat/completions"
# Long enough to fill a few of vLLM's CPU KV blocks (128 tokens), so a repeat is a prefix-cache hit.
SYSTEM = " ".join(
    f"Rule {i}: answer travel questions briefly, in English, with dates in ISO format and prices in CNY."
    for i in range(1, 25)
)


@dataclass(frozen=True)
class Worker:
    """One engine behind the router: its URL and the key its /metrics needs."""

    base_url: str
    key: str | None


def counter(engine: Worker, name: str) -> float:
    """Sum of one counter over all its label sets on an engine's /metrics."""
    text = httpx.get(f"{engine.base_url}/metrics", headers=engine_headers(engine.key), timeout=10).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    )


def snapshot(engines: list[Worker]) -> list[tuple[float, float]]:
    return [(counter(e, "vllm:request_success_total"), counter(e, "vllm:prefix_cache_hits_total")) for e in engines]


def chat(gateway: RoutedGateway, tenant: str, text: str, **extra: object) -> httpx.Response:
    body = {
        "model": "smollm2-135m-instruct",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}],
        "max_tokens": 2,
        "temperature": 0,
        **extra,
    }
    with gateway.client(tenant) as client:
        return client.post(CHAT, json=body)


@pytest.fixture
def two_engines(engine_url: str, engine_key: str | None, spare_engine: SpareEngine) -> list[Worker]:
    """The session's engine (0) and the spare (1), the one this test may kill."""
    return [Worker(engine_url, engine_key), Worker(spare_engine.running().base_url, engine_key)]


def test_tenants_stick_to_one_engine_and_survive_the_loss_of_it(
    two_engines: list[Worker],
    spare_engine: SpareEngine,
    engine_key: str | None,
    engine_model: str,
    prepared_model_dir: Path,
    routed_gateway_factory: Callable[..., RoutedGateway],
) -> None:
    urls = [engine.base_url for engine in two_engines]
    gateway = routed_gateway_factory(urls, engine_model, prepared_model_dir, engine_key=engine_key)

    # Placement: probe tenants (one request each) until both engines have one.
    placement: dict[str, int] = {}
    for tenant in TENANTS[:12]:
        before = snapshot(two_engines)
        assert chat(gateway, tenant, "hello").status_code == 200
        after = snapshot(two_engines)
        grown = [i for i in range(2) if after[i][0] > before[i][0]]
        assert len(grown) == 1, f"one request of {tenant} was counted on engines {grown}"
        placement[tenant] = grown[0]
        if set(placement.values()) == {0, 1}:
            break
    assert set(placement.values()) == {0, 1}, f"12 tenants all hashed to one engine: {placement}"

    # Affinity: two more requests per tenant, on its engine only, hitting the prefix cache it warmed.
    for tenant, home in placement.items():
        before = snapshot(two_engines)
        for text in ("and again", "once more"):
            response = chat(gateway, tenant, text)
            assert response.status_code == 200
        after = snapshot(two_engines)
        other = 1 - home
        assert after[home][0] - before[home][0] == 2 and after[other][0] == before[other][0], tenant
        assert after[home][1] > before[home][1], f"no prefix-cache hit on {tenant}'s engine"
        assert after[other][1] == before[other][1]
        cached = response.json()["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)
        assert cached >= 128, f"{tenant}: only {cached} cached prompt tokens"

    # The planner's grammar-constrained calls (structured_outputs) pass the router and stay home too.
    planner_tenant, home = next(iter(placement.items()))
    before = snapshot(two_engines)
    with gateway.client(planner_tenant) as client:
        request = "Find flights from Shanghai to Hangzhou on 2027-06-20 and the weather in Hangzhou that day."
        detail = client.post("/v1/plans", json={"request": request}).json()
    after = snapshot(two_engines)
    assert detail["path"] in {"model", "model_retry"} and detail["validation"]["ok"] is True, detail
    assert after[home][0] > before[home][0] and after[1 - home][0] == before[1 - home][0]

    # Failover: kill the engine of one tenant while a stream of that tenant is in flight.
    victim = next(tenant for tenant, engine in placement.items() if engine == 1)  # a tenant of the spare
    dead, alive = spare_engine.running(), two_engines[0]
    first_chunk = threading.Event()
    in_flight: dict[str, object] = {}

    def stream() -> None:
        body = {"model": engine_model, "messages": [{"role": "user", "content": "Tell a long story."}],
                "max_tokens": 200, "stream": True}  # fmt: skip
        try:
            with gateway.client(victim) as client, client.stream("POST", CHAT, json=body) as response:
                in_flight["status"] = response.status_code
                lines = []
                for line in response.iter_lines():
                    first_chunk.set()
                    lines.append(line)
                data = [line for line in lines if line.startswith("data: ")]
                in_flight["data_events"] = len(data)
                in_flight["error_event"] = next((line[:160] for line in data if '"error"' in line), None)
                in_flight["done"] = bool(data) and data[-1] == "data: [DONE]"
        except httpx.HTTPError as exc:
            in_flight["error"] = repr(exc)
        finally:
            first_chunk.set()

    streamer = threading.Thread(target=stream)
    streamer.start()
    assert first_chunk.wait(120)
    assert dead._proc is not None
    os.killpg(dead._proc.pid, signal.SIGKILL)
    streamer.join(180)
    assert not streamer.is_alive(), "the in-flight stream did not end after its engine was killed"
    assert in_flight.get("done"), f"the in-flight stream did not end with [DONE]: {in_flight}"  # error or not

    served_before = counter(alive, "vllm:request_success_total")
    statuses = [chat(gateway, victim, f"after the loss {i}").status_code for i in range(5)]
    assert statuses == [200] * 5, f"in flight: {in_flight}; after: {statuses}"
    assert counter(alive, "vllm:request_success_total") - served_before == 5
    assert httpx.get(gateway.url + "/health", timeout=10).status_code == 200
    print(f"\nplacement {placement}; in flight at the kill: {in_flight}; after it: {statuses}")

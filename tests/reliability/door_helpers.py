"""Hostile bodies for the door tests (test_rel_sec_door*.py), and the harness that sends four of them at
once while a separate process times `/health` and another tenant plans a small request.

Every body fits the default `gateway.max_body_bytes` (1 MiB) and is built to make a check do as much
work as the client can make it do: quadratic duplicate checks, `$ref` expansion, pattern compiles,
JSON-Schema meta-validation, JSON decoding of many tiny values.
"""

from __future__ import annotations

import json
import secrets
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.conftest import KEY_A, KEY_B
from tests.reliability.sec_helpers import HEALTH_BOUND_S, GatewayProcess, HealthProbe, probe_during

MAX_BODY = 1_048_576
SMALL_REQUEST = "Flights Shanghai to Hangzhou on June 20 and the weather there."
# Tenant B's small planning request during an attack may take this much longer than its slowest
# baseline. Its own work is the same; what it shares is the CPU: two cores, the attack's checks in
# worker processes at nice 10, the test's own threads and the fake upstream. The figure is of the
# order of the /health bound, and well below what a blocked event loop costs it (the issue measured
# 72 s for the same request during the 43,000-node flood).
OTHER_TENANT_SLACK_S = 0.5
HOSTILE_ANSWER_S = 3.0  # each hostile request's 4xx, from sending it (the issue: "within a second or two")


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def fitted(build: Callable[[int], Any], limit: int = MAX_BODY) -> bytes:
    """The largest body `build(n)` (monotonic in n) whose compact JSON fits `limit` bytes."""
    low, high = 1, 1
    while len(compact(build(high))) <= limit:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if len(compact(build(middle))) <= limit:
            low = middle
        else:
            high = middle
    return compact(build(low))


def huge_plan(count: int) -> dict[str, Any]:
    """`count` nodes whose ids repeat n1…n99: the shape that made the duplicate check quadratic."""
    return {"nodes": [{"id": f"n{i % 99 + 1}", "tool": "t"} for i in range(count)]}


def ref_bomb(refs: int = 5, name: str = "bomb") -> dict[str, Any]:
    """A ~250-byte tool whose one definition holds `refs` references to itself under anyOf."""
    defs = {"a": {"anyOf": [{"$ref": "#/$defs/a"} for _ in range(refs)]}}
    parameters = {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": defs}
    return {"type": "function", "function": {"name": name, "description": "d", "parameters": parameters}}


def pattern_tool(arguments: int, repeat: int = 400, name: str = "patterned") -> dict[str, Any]:
    """String arguments each with a fresh pattern `\\pL{repeat}<8 random hex>` (nothing cached)."""
    props = {
        f"a{i}": {"type": "string", "pattern": f"\\pL{{{repeat}}}{secrets.token_hex(4)}"} for i in range(arguments)
    }
    return {"type": "function", "function": {"name": name, "description": "d", "parameters": {
        "type": "object", "properties": props}}}  # fmt: skip


def valid_tool(index: int, tag: str) -> dict[str, Any]:
    """A valid tool of about 6.5 KB: 20 enumerated string arguments with long descriptions. `tag` changes
    the schema (property titles) without changing the text the planner embeds (name and description,
    kept short: embedding 128 long descriptions with MiniLM is the planner's own work, tens of seconds
    of CPU here, not what this test measures)."""
    props = {
        f"arg{j}": {
            "type": "string",
            "title": f"{tag}{j}",
            "description": "x" * 190,
            "enum": [f"v{k}" for k in range(5)],
        }
        for j in range(20)
    }
    parameters = {"type": "object", "properties": props, "required": ["arg0"]}
    return {"type": "function", "function": {"name": f"tool_{index}", "description": f"Look up record {index}.",
                                             "parameters": parameters}}  # fmt: skip


def valid_catalog(tag: str, tools: int = 128) -> list[dict[str, Any]]:
    return [valid_tool(i, tag) for i in range(tools)]


@dataclass
class Sent:
    status: int
    seconds: float
    body: dict[str, Any]
    size: int


@dataclass
class Attack:
    """What one attempt measured: the hostile answers, tenant B's small request, the probe."""

    hostile: list[Sent] = field(default_factory=list)
    other: float = 0.0
    other_status: int = 0
    health: str = ""


def post(client: httpx.Client, route: str, body: bytes, content_type: str = "application/json") -> Sent:
    started = time.perf_counter()
    response = client.post(route, content=body, headers={"Content-Type": content_type})
    seconds = time.perf_counter() - started
    try:
        payload = response.json()
    except ValueError:
        payload = {"raw": response.text[:200]}
    return Sent(response.status_code, seconds, payload, len(response.content))


def small_plan_seconds(gateway: GatewayProcess) -> tuple[float, int]:
    """Tenant B's small planning request against the fake model: (seconds, status)."""
    with gateway.client(KEY_B, timeout=60) as client:
        sent = post(client, "/v1/plans", json.dumps({"request": SMALL_REQUEST}).encode())
    return sent.seconds, sent.status


def baseline(gateway: GatewayProcess, runs: int = 3) -> float:
    """The slowest of `runs` small requests of tenant B on a quiet gateway (after one warm-up)."""
    small_plan_seconds(gateway)
    times = [small_plan_seconds(gateway)[0] for _ in range(runs)]
    return max(times)


def attack(gateway: GatewayProcess, bodies: list[tuple[str, bytes]], *, other_after_s: float = 0.1) -> Attack:
    """Send `bodies` (route, body) at once as tenant A, and tenant B's small request `other_after_s`
    later, each from its own thread and client."""
    result = Attack()
    lock = threading.Lock()
    clients = [gateway.client(KEY_A, timeout=60) for _ in bodies]

    def send(index: int) -> None:
        route, body = bodies[index]
        sent = post(clients[index], route, body)
        with lock:
            result.hostile.append(sent)

    def other() -> None:
        time.sleep(other_after_s)
        result.other, result.other_status = small_plan_seconds(gateway)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    threads.append(threading.Thread(target=other))
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        for client in clients:
            client.close()
    return result


def attack_with_probe(
    gateway: GatewayProcess, make_bodies: Callable[[int], list[tuple[str, bytes]]], limit_s: float
) -> tuple[HealthProbe, list[Attack]]:
    """Up to three attempts (sec_helpers.probe_during): an attempt is repeated when /health or tenant B
    missed its bound, since the shared machine's own noise can; a blocked loop misses on every one."""
    attempts: list[Attack] = []

    def one(attempt: int) -> Attack:
        done = attack(gateway, make_bodies(attempt))
        attempts.append(done)
        return done

    probes: list[HealthProbe] = []
    probe, _ = probe_during(gateway.url, one, attempts=3, retry=lambda p, done: done.other > limit_s, probes=probes)
    for done, each in zip(attempts, probes, strict=True):
        done.health = each.report()
    return probe, attempts


def report(name: str, probe: HealthProbe, attacks: list[Attack], base: float) -> str:
    last = attacks[-1]
    hostile = sorted(s.seconds for s in last.hostile)
    return (
        f"\n{name}: {len(attacks)} attempt(s); hostile answers {[s.status for s in last.hostile]} in "
        f"{hostile[0]:.2f}–{hostile[-1]:.2f} s, largest body {max(s.size for s in last.hostile)} B; "
        f"tenant B {last.other:.2f} s (baseline {base:.2f} s, median over attempts "
        f"{statistics.median(a.other for a in attacks):.2f} s); /health {probe.report()}"
        + (f" (earlier attempts: {'; '.join(a.health for a in attacks[:-1])})" if len(attacks) > 1 else "")
    )


__all__ = ["HEALTH_BOUND_S"]


# -- toolset registrations (POST /v1/toolsets): hostile OpenAPI documents, each within the operation cap --

DOCUMENT_BASE_URL = "https://203.0.113.10"  # TEST-NET-3: allowed by the door tests' egress CIDR, never dialled


def openapi_document(paths: dict[str, Any], schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"openapi": "3.1.0", "info": {"title": "hostile", "version": "1"}, "paths": paths}
    if schemas is not None:
        document["components"] = {"schemas": schemas}
    return document


def lookup_operation(index: int, schema: dict[str, Any]) -> dict[str, Any]:
    """A GET whose query argument and 200 JSON answer both have `schema`."""
    answer = {"description": "ok", "content": {"application/json": {"schema": schema}}}
    parameter = {"name": "q", "in": "query", "schema": schema}
    return {"get": {"operationId": f"op{index}", "parameters": [parameter], "responses": {"200": answer}}}


def registration(name: str, build: Callable[[int], dict[str, Any]], limit: int = MAX_BODY) -> bytes:
    """The largest registration of the OpenAPI document `build(n)` that fits `limit` bytes."""
    return fitted(
        lambda n: {"name": name, "kind": "openapi", "base_url": DOCUMENT_BASE_URL, "document": build(n)}, limit
    )


def tiny_schemas_document(count: int) -> dict[str, Any]:
    """One operation and `count` tiny component schemas: the spec validator's most work per byte (a 1 MiB
    one takes it about a minute here, far past the door's deadline)."""
    return openapi_document(
        {"/a": lookup_operation(0, {"type": "object"})}, {f"s{i}": {"type": "integer"} for i in range(count)}
    )


def ref_loop_document(count: int) -> dict[str, Any]:
    """64 operations (the default cap) whose schemas are a self-referencing anyOf, and `count` more
    references to it: `$ref` expansion at its bounds."""
    loop = {"anyOf": [{"$ref": "#/components/schemas/a"} for _ in range(5)]}
    schemas = {"a": loop, **{f"f{i}": {"$ref": "#/components/schemas/a"} for i in range(count)}}
    return openapi_document(
        {f"/p{i}": lookup_operation(i, {"$ref": "#/components/schemas/a"}) for i in range(64)}, schemas
    )


def pattern_body_document(count: int) -> dict[str, Any]:
    """64 POSTs whose JSON bodies hold `count` string properties, each with a fresh costly pattern."""
    properties = {f"a{j}": {"type": "string", "pattern": f"\\pL{{400}}{secrets.token_hex(4)}"} for j in range(count)}
    body = {"content": {"application/json": {"schema": {"type": "object", "properties": properties}}}}
    operation = {"requestBody": body, "responses": {"200": {"description": "ok"}}}
    return openapi_document({f"/p{i}": {"post": {"operationId": f"op{i}", **operation}} for i in range(64)})

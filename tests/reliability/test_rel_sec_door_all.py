"""Issue 19: a generic door test. Every operation of the gateway that takes a request body — read from its
own OpenAPI document, so an endpoint added later is covered without a new test — gets the largest
bodies the limits allow, built to make the checks work as hard as a client can make them: many tiny
values, deep nesting, many `$ref`s and costly patterns in `tools`, a client plan of tens of thousands
of nodes. Routes whose own work is beyond their body's decoding get their own hostile bodies as well
(`ROUTE_SHAPES`: a toolset registration's OpenAPI document is imported and its tools compiled by the
door; an answer to a tool call carries an output of many tiny values). Each (operation, shape) once,
four in flight at a time, from one tenant, while a separate process times `/health` every 50 ms.

Bound: the gateway's event loop never runs 200 ms of CPU at a stretch during an attempt (its loop
monitor's figure, read from /metrics; `/health`'s wall-clock latency is reported beside it: see
sec_helpers for why the wall clock is not the bound).
Every answer must be an OpenAI-shaped error below 500, or a 503 saying the checks ran out of time.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import FAKE_MODEL, KEY_A
from tests.reliability.door_helpers import (
    MAX_BODY,
    compact,
    fitted,
    huge_plan,
    pattern_body_document,
    pattern_tool,
    ref_bomb,
    ref_loop_document,
    registration,
    tiny_schemas_document,
)
from tests.reliability.helpers import check_error_shape
from tests.reliability.sec_helpers import GatewayProcess, HealthProbe, gateway_process, probe_during

pytestmark = [pytest.mark.fake_upstream, pytest.mark.slow, pytest.mark.timeout(1200)]
ID_PATTERN = re.compile(r"\^([a-z]+_)\[0-9a-f\]\{(\d+)(?:,\d+)?\}\$")


def operations(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(path with its parameters filled in, content type) of every operation that takes a body."""
    found = []
    for path, methods in document["paths"].items():
        for operation in methods.values():
            if "requestBody" not in operation:
                continue
            content = next(iter(operation["requestBody"]["content"]))
            for filled in _fill(path, [p for p in operation.get("parameters", []) if p["in"] == "path"]):
                found.append((filled, content))
    return found


def _fill(path: str, parameters: list[dict[str, Any]]) -> list[str]:
    """Every combination of valid path parameter values (each enum value, an id of the right form)."""
    paths = [path]
    for parameter in parameters:
        schema, name = parameter["schema"], parameter["name"]
        if "enum" in schema:
            values = list(schema["enum"])
        else:
            match = ID_PATTERN.fullmatch(schema.get("pattern", ""))
            assert match, f"no value for the path parameter {name!r} ({schema}): teach _fill its form"
            values = [match.group(1) + "0" * int(match.group(2))]
        paths = [p.replace("{" + name + "}", value) for p in paths for value in values]
    return paths


def wide(_: int) -> bytes:
    """One object of ~95,000 tiny members: the most decoding work per byte."""
    return fitted(lambda n: {f"k{i}": 0 for i in range(n)})


def sink(attempt: int) -> bytes:
    """Every field a route reads, each hostile: tools full of self-references and costly patterns, a
    client plan of ~20,000 nodes, many messages and inputs."""
    tools = [ref_bomb(5, name=f"r{attempt}_{i}") for i in range(64)]
    tools += [pattern_tool(32, 7, name=f"p{attempt}_{i}") for i in range(8)]

    def build(n: int) -> dict[str, Any]:
        return {
            "model": FAKE_MODEL,
            "request": "x",
            "messages": [{"role": "user", "content": "x"}] * 50,
            "input": ["x"] * 50,
            "prompt": "x",
            "tools": tools,
            "plan": huge_plan(n),
            "corrected_plan": huge_plan(10),
            "name": "x",
        }

    return fitted(build)


def deep(_: int) -> bytes:
    """Branches nested 900 levels deep (the JSON parser's own limit is near 1,000), as many as fit."""
    level = 900
    branch = '{"a":' * level + "0" + "}" * level
    count = (MAX_BODY - 200) // (len(branch) + 1)
    body = '{"model":"' + FAKE_MODEL + '","request":"x","plan":{"nodes":[{"id":"n1","tool":"t","args":{"x":['
    return (body + ",".join([branch] * count) + "]}}]}}").encode()


def items(_: int) -> bytes:
    """Long arrays of tiny items where a route takes a list (messages, inputs, tools)."""
    return fitted(lambda n: {"model": FAKE_MODEL, "messages": [{}] * n, "input": [""] * n, "tools": [0] * n})


SHAPES: dict[str, Callable[[int], bytes]] = {"wide": wide, "sink": sink, "deep": deep, "items": items}
TOOLSETS = "/v1/toolsets"
TOOL_OUTPUTS = re.compile(r"/v1/runs/run_0+/tool_outputs")
ROUTE_SHAPES: dict[str, dict[str, Callable[[int], bytes]]] = {
    # each attempt registers new names: a name stored by an earlier attempt would be refused before the import
    TOOLSETS: {
        "tiny_schemas": lambda attempt: registration(f"tiny{attempt}", tiny_schemas_document),
        "ref_loops": lambda attempt: registration(f"loops{attempt}", ref_loop_document),
        "pattern_bodies": lambda attempt: registration(f"patterns{attempt}", pattern_body_document),
    },
    TOOL_OUTPUTS.pattern: {"wide_output": lambda _: fitted(lambda n: {"node_id": "n1", "output": wide_output(n)})},
}
EGRESS = {"PLANSTACK_TOOLS__EGRESS": json.dumps({"cidrs": ["203.0.113.0/24"]})}  # where the registrations point


def wide_output(members: int) -> dict[str, int]:
    return {f"k{i}": 0 for i in range(members)}


def shapes_of(route: str) -> dict[str, Callable[[int], bytes]]:
    """The generic shapes, and the route's own."""
    own = next((shapes for key, shapes in ROUTE_SHAPES.items() if re.fullmatch(key, route)), {})
    return SHAPES | own


def jsonl(body: bytes) -> bytes:
    """The same content as one JSON line, for the import route (text/plain JSON lines)."""
    return body.replace(b"\n", b" ")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Any:
    home: Path = tmp_path_factory.mktemp("door-all")
    with gateway_process(home, env=EGRESS) as running:
        yield running


def flood(gateway: GatewayProcess, routes: list[tuple[str, str]], attempt: int) -> list[tuple[str, str, int, float]]:
    """Every (route, shape) once, four in flight at a time; (route, shape, status, seconds) of every answer."""
    bodies: dict[tuple[str, Callable[[int], bytes]], bytes] = {}
    sends: list[tuple[str, str, str, bytes]] = []
    for route, content_type in routes:
        for name, shape in shapes_of(route).items():
            if (name, shape) not in bodies:  # the generic ones built once (each takes seconds)
                bodies[name, shape] = shape(attempt)
            body = bodies[name, shape]
            assert len(body) <= MAX_BODY, (name, len(body))
            sends.append((route, content_type, name, jsonl(body) if content_type == "text/plain" else body))

    def send(route: str, content_type: str, name: str, payload: bytes) -> tuple[str, str, int, float]:
        with gateway.client(KEY_A, timeout=60) as client:
            started = time.perf_counter()
            response = client.post(route, content=payload, headers={"Content-Type": content_type})
            took = time.perf_counter() - started
        check_error_shape(response)
        code = response.json()["error"]["code"] if response.status_code >= 400 else None
        assert response.status_code < 500 or code == "request_check_timeout", (route, name, response.text)
        return route, name, response.status_code, took

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda each: send(*each), sends))


def test_every_body_route_under_the_largest_hostile_bodies(gateway: GatewayProcess) -> None:
    document = httpx.get(gateway.url + "/openapi.json", timeout=30).json()
    routes = operations(document)
    paths = {r for r, _ in routes}
    assert {"/v1/plans", "/v1/runs", "/v1/chat/completions", "/v1/demonstrations", TOOLSETS} <= paths
    assert any(TOOL_OUTPUTS.fullmatch(path) for path in paths)
    with gateway.client(KEY_A, timeout=120) as client:  # the door's workers start on the first large body
        client.post("/v1/runs", content=compact({"request": "x", "plan": huge_plan(30_000)}))
    probes: list[HealthProbe] = []
    probe, attempts = probe_during(gateway.url, lambda attempt: flood(gateway, routes, attempt), probes=probes)
    answers = attempts[-1]
    assert len(answers) == sum(len(shapes_of(route)) for route, _ in routes), "every request was answered"
    slowest = max(answers, key=lambda a: a[3])
    statuses = sorted({status for _, _, status, _ in answers})
    print(
        f"\n{len(routes)} operations, {len(answers)} (operation, shape) pairs, 4 in flight at a time "
        f"({len(attempts)} attempt(s)): statuses "
        f"{statuses}, slowest answer {slowest[3]:.2f} s ({slowest[0]}, {slowest[1]}); /health "
        + "; ".join(each.report() for each in probes)
    )
    assert not probe.loop_stalls, f"/health during the floods: {probe.report()}"
    json.dumps(answers)  # the record above is plain data (printed in the report)

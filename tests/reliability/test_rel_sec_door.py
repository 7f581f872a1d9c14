"""Issue 19: the checks at the door are bounded before they work, off the event loop, fair between tenants.

The four reproductions of the issue, each as FOUR concurrent hostile bodies from tenant A against a
real gateway in its own process (sec_worker; loopback, every body within the 1 MiB body limit),
while a separate process times `/health` every 50 ms and tenant B sends a small `POST /v1/plans`.
Tenant B's request plans against the FAKE upstream (tests/fakes: it answers every engine call with a
fixed text, so the planner falls back after its retries): its own work is the same in the baseline
and during the attack, which is what "not delayed by more than its own work" compares.

Bounds, and why they are what they are: no stretch of the gateway's event loop over 200 ms of CPU (the
issue's /health bound, measured where the host's load cannot move it: sec_helpers); tenant B within its slowest quiet baseline + OTHER_TENANT_SLACK_S (door_helpers: CPU shared
on two cores with the checks running at nice 10); each hostile answer within HOSTILE_ANSWER_S of
sending it. An attempt that misses the loop or tenant-B bound is repeated, up to three in all
(sec_helpers.probe_during): the machine's own noise can miss one attempt; a blocked event loop
misses all of them. Before the fix: 17–72 s answers, /health 54 s, tenant B 72 s (the issue's
figures on the same kind of machine).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import KEY_A
from tests.reliability.door_helpers import (
    HOSTILE_ANSWER_S,
    OTHER_TENANT_SLACK_S,
    baseline,
    fitted,
    huge_plan,
    pattern_tool,
    post,
    ref_bomb,
    report,
    valid_catalog,
)
from tests.reliability.door_helpers import attack_with_probe as attack
from tests.reliability.sec_helpers import GatewayProcess, gateway_process

pytestmark = [pytest.mark.fake_upstream, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, float]]:
    """One gateway for the module, its door workers started (the first large body starts them: 1–3 s),
    and tenant B's quiet baseline on it."""
    home: Path = tmp_path_factory.mktemp("door")
    # 30 s instead of 10 for a request's checks: four valid 850 KB catalogs of one tenant are validated one
    # after the other, 2-5 s each at nice 10 on this shared machine; the first one must not time out
    with gateway_process(home, env={"PLANSTACK_DOOR__DEADLINE_S": "30"}) as running:
        with running.client(KEY_A, timeout=120) as client:
            warm = post(client, "/v1/runs", fitted(lambda n: {"request": "x", "plan": huge_plan(n)}))
            assert warm.status == 400, warm.body
        yield running, baseline(running)


def check_hostile(attacks: list, code: str | None, param: str | None) -> None:
    for sent in attacks[-1].hostile:
        assert sent.status == 400, sent.body
        error = sent.body["error"]
        assert code is None or error["code"] == code, error
        assert param is None or error["param"] == param, error
        assert sent.size < 8192, f"a refusal of {sent.size} bytes: it names the first problems only"
        assert sent.seconds < HOSTILE_ANSWER_S, f"a refusal after {sent.seconds:.1f} s"


def check_bounds(probe, attacks: list, base: float) -> None:
    assert not probe.loop_stalls, f"/health during the attack: {probe.report()}"
    assert attacks[-1].other_status == 200
    assert attacks[-1].other < base + OTHER_TENANT_SLACK_S, (attacks[-1].other, base)


def test_four_plans_of_43000_nodes(gateway: tuple[GatewayProcess, float]) -> None:
    """`POST /v1/runs` with a client plan of ~43,000 nodes (ids n1…n99 repeated): refused by the plan's
    length bound before any node is validated, the body decoded in a door worker."""
    running, base = gateway
    body = fitted(lambda n: {"request": "x", "plan": huge_plan(n)})
    assert len(json.loads(body)["plan"]["nodes"]) > 40_000

    def bodies(_: int) -> list[tuple[str, bytes]]:
        return [("/v1/runs", body)] * 4

    probe, attacks = attack(running, bodies, base + OTHER_TENANT_SLACK_S)
    print(report("43,000-node plans x4", probe, attacks, base))
    check_hostile(attacks, "invalid_value", "plan.nodes")
    assert "at most 99" in attacks[-1].hostile[0].body["error"]["message"]
    check_bounds(probe, attacks, base)


def test_four_self_referencing_schemas(gateway: tuple[GatewayProcess, float]) -> None:
    """A 250-byte tool whose `$defs` entry holds five `$ref`s to itself under anyOf (4.4 MB of error
    and 18 s before), and a body of 128 of them: the expansion is bounded while it runs."""
    running, base = gateway

    def bodies(attempt: int) -> list[tuple[str, bytes]]:
        one = [ref_bomb(5, name=f"bomb{attempt}_{i}") for i in range(2)]
        many = [[ref_bomb(5, name=f"b{attempt}_{i}_{k}") for k in range(128)] for i in range(2)]
        sets = [[tool] for tool in one] + many
        return [("/v1/plans", json.dumps({"request": "x", "tools": tools}).encode()) for tools in sets]

    probe, attacks = attack(running, bodies, base + OTHER_TENANT_SLACK_S)
    print(report("self-referencing schemas x4", probe, attacks, base))
    check_hostile(attacks, None, "tools")
    assert all("$ref" in sent.body["error"]["message"] for sent in attacks[-1].hostile)
    check_bounds(probe, attacks, base)


def test_four_catalogs_of_costly_patterns(gateway: tuple[GatewayProcess, float]) -> None:
    """33 string arguments with fresh `\\pL{400}…` patterns (refused by the argument limit before any
    compiles), and 32 with `\\pL{7}…` (8,384 RE2 instructions each: refused by the request's compile
    budget at the third)."""
    running, base = gateway

    def bodies(attempt: int) -> list[tuple[str, bytes]]:
        tools = [[pattern_tool(33, 400, name=f"p{attempt}_{i}")] for i in range(2)]
        tools += [[pattern_tool(32, 7, name=f"q{attempt}_{i}")] for i in range(2)]
        return [("/v1/plans", json.dumps({"request": "x", "tools": each}).encode()) for each in tools]

    probe, attacks = attack(running, bodies, base + OTHER_TENANT_SLACK_S)
    print(report("costly patterns x4", probe, attacks, base))
    check_hostile(attacks, None, "tools")
    messages = sorted(sent.body["error"]["message"] for sent in attacks[-1].hostile)
    assert sum("at most 32 arguments" in m for m in messages) == 2, messages
    assert sum("RE2 instructions" in m for m in messages) == 2, messages
    check_bounds(probe, attacks, base)


def test_four_valid_catalogs_of_128_tools_then_reuse(gateway: tuple[GatewayProcess, float]) -> None:
    """Four distinct valid ~850 KB catalogs of 128 tools at once: validated in the door's workers, one
    at a time for this tenant (a request past `door.deadline_s` behind the others may get a 503); the
    same catalog sent again is not validated again (`catalog_hit`)."""
    running, base = gateway
    first: dict[str, bytes] = {}

    def bodies(attempt: int) -> list[tuple[str, bytes]]:
        made = [json.dumps({"request": "x", "tools": valid_catalog(f"t{attempt}{i}")}).encode() for i in range(4)]
        first["body"] = made[0]
        return [("/v1/plans", body) for body in made]

    assert len(valid_catalog("t00")) == 128 and 700_000 < len(json.dumps(valid_catalog("t00"))) < 1_000_000
    probe, attacks = attack(running, bodies, base + OTHER_TENANT_SLACK_S)
    print(report("valid 128-tool catalogs x4", probe, attacks, base))
    statuses = [sent.status for sent in attacks[-1].hostile]
    # accepted: planned (200) or planned without a usable answer from the fake model (422); the last in
    # the tenant's queue may pass the deadline on a busy machine (503)
    assert {200, 422} & set(statuses) and set(statuses) <= {200, 422, 503}, [s.body for s in attacks[-1].hostile]
    for sent in attacks[-1].hostile:
        expected = {422: "planning_failed", 503: "request_check_timeout"}.get(sent.status)
        assert expected is None or sent.body["error"]["code"] == expected, sent.body
    check_bounds(probe, attacks, base)
    with running.client(KEY_A, timeout=60) as client:
        hits = _metric(client.get("/metrics").text, 'planstack_door_checks_total{outcome="catalog_hit"}')
        again = post(client, "/v1/plans", first["body"])
        after = _metric(client.get("/metrics").text, 'planstack_door_checks_total{outcome="catalog_hit"}')
    print(f"the same catalog again: {again.status} in {again.seconds:.2f} s")
    assert again.status in (200, 422) and after == hits + 1


def _metric(text: str, series: str) -> float:
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0

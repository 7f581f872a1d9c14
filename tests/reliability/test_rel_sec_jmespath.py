"""A client's `success_condition` cannot freeze the gateway.

`[@,@][]|` repeated doubles the data each time (22 times held `/health` for 2.5 s when conditions
were evaluated on the event loop). Now the language is bounded when a plan is validated (such a
plan is a 400 at `POST /v1/runs`), and every allowed condition is evaluated in a worker thread with
size and time bounds. Both are checked against a real gateway in its own process while a separate
client times `/health`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from contract.conditions import condition_problem
from executors.conditions import MAX_ITEMS, check_condition
from tests.reliability.helpers import check_error_shape, sse_events
from tests.reliability.sec_helpers import gateway_process, probe_during

pytestmark = [pytest.mark.fake_upstream, pytest.mark.timeout(300)]

BLOWUP = "[@,@][]|" * 22 + "length(@)"
WORST_ALLOWED = [  # the most expensive shapes benchmarks/condition_worst_case.py found within the bounds
    "length(items|[@,@,@,@][]|[@,@][]|[?contains(to_string(@), 'x')]) > `0`",
    "max_by(items|[@,@,@,@][]|[@,@][], &length(to_string(@))).n > `0`",
    "length(to_string(items|[@,@,@,@,@,@,@,@])) > `0`",
]


def test_blowup_condition_is_refused_at_validation_and_health_stays_fast(tmp_path: Path) -> None:
    with gateway_process(tmp_path) as gateway, gateway.client() as client:

        def attack(_: int) -> list[int]:
            statuses = []
            for attempt in range(3):
                node = {"id": "n1", "tool": "step", "args": {"label": f"b{attempt}"}, "success_condition": BLOWUP}
                response = client.post("/v1/runs", json={"request": "blow up", "plan": {"nodes": [node]}})
                check_error_shape(response)
                statuses.append(response.status_code)
                if response.status_code == 400:
                    error = response.json()["error"]
                    assert error["param"] == "plan" and "allowed language" in error["message"], error
                time.sleep(1.0)  # were the run accepted, it would now be executing
            return statuses

        probe, results = probe_during(gateway.url, attack)
    print(f"\nJMESPath blow-up x3: statuses {results}; /health {probe.report()}")
    assert not probe.loop_stalls, f"/health during the attack: {probe.report()}"
    assert all(statuses == [400, 400, 400] for statuses in results), results


def test_worst_allowed_conditions_leave_health_fast(tmp_path: Path) -> None:
    # Outputs of 2,000 objects (~280 KiB): the conditions' cost grows with them, but so does the
    # executor's own work on each output (validation, hashing, the store), which is not under test
    # here; the worst case on a 1 MiB output is measured by benchmarks/condition_worst_case.py.
    nodes = [  # one after the other
        {"id": f"n{i}", "tool": "bulk", "args": {"count": 2000}, "success_condition": condition}
        | ({"depends_on": [f"n{i - 1}"]} if i > 1 else {})
        for i, condition in enumerate(WORST_ALLOWED, start=1)
    ]
    assert all(condition_problem(n["success_condition"]) is None for n in nodes)
    with gateway_process(tmp_path) as gateway, gateway.client() as client:

        def attack(_: int) -> list[tuple[str, dict[str, Any]]]:
            created = client.post("/v1/runs", json={"request": "heavy conditions", "plan": {"nodes": nodes}})
            assert created.status_code == 202, created.text
            with client.stream("GET", f"/v1/runs/{created.json()['run_id']}/events") as stream:
                return sse_events(list(stream.iter_lines()))

        probe, runs = probe_during(gateway.url, attack)
    print(f"\nworst allowed conditions on ~280 KiB outputs: /health {probe.report()}")
    assert not probe.loop_stalls, f"/health while the conditions ran: {probe.report()}"
    for events in runs:
        settled = {e["node_id"]: e for kind, e in events if kind in ("node_finished", "node_failed")}
        assert set(settled) == {"n1", "n2", "n3"}, events
        # A condition that builds too much is stopped and reported, not evaluated to the end.
        assert settled["n3"]["data"]["error"]["type"] == "invalid_condition", settled["n3"]
        assert "stopped" in json.dumps(settled["n3"]["data"]["error"])


def test_evaluation_bounds_hold_without_validation() -> None:
    """A stored or internal plan that skipped validation still cannot blow up: the same bounds apply
    at evaluation, and an intermediate result over the item cap stops the interpreter."""
    started = time.perf_counter()
    outcome = check_condition(BLOWUP, {"a": 1})
    assert outcome.error is not None and outcome.error.kind == "invalid_condition"
    assert "allowed language" in outcome.error.message
    big = list(range(MAX_ITEMS // 4 + 1))
    outcome = check_condition("length([@,@,@,@,@,@,@,@][]) > `0`", big)
    assert outcome.error is not None and "more than" in outcome.error.message, outcome
    assert time.perf_counter() - started < 30  # generous: this only guards against a runaway
    for expression in ("foo(@)", "`" + json.dumps(list(range(200))) + "`", "a" + ".a" * 70, "!" * 20 + "a"):
        assert condition_problem(expression) is not None, expression

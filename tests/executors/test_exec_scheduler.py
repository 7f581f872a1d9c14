"""DagScheduler: order, parallelism, references, retries, timeouts, breaker, fallback, caps."""

from __future__ import annotations

from typing import Any

from exec_helpers import FakeSleep, FlakyState, make_registry, make_scheduler, plan_of, run

from contract.plan import Plan, PlanNode
from executors.breaker import BreakerBoard
from executors.observation import NodeResult, sha256_json
from executors.scheduler import DagScheduler, RoundOutcome, reuse_key


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.retries: list[tuple[str, int, float]] = []

    async def node_started(self, node: PlanNode, round_: int) -> None:
        self.events.append(("started", node.id))

    async def node_retrying(
        self, node: PlanNode, round_: int, attempt: int, delay_s: float, error: dict[str, Any]
    ) -> None:
        self.retries.append((node.id, attempt, delay_s))

    async def node_settled(self, result: NodeResult) -> None:
        self.events.append((result.status, result.node_id))


def execute(scheduler: DagScheduler, plan: Plan, **kwargs: Any) -> tuple[RoundOutcome, Recorder]:
    recorder = Recorder()
    outcome = run(scheduler.run_plan(plan, observer=recorder, **kwargs))
    return outcome, recorder


def overlaps(a: NodeResult, b: NodeResult) -> bool:
    assert a.started_at and a.finished_at and b.started_at and b.finished_at
    return a.started_at < b.finished_at and b.started_at < a.finished_at


DIAMOND = plan_of(
    {"id": "n1", "tool": "echo", "args": {"label": "root", "value": 2}},
    {"id": "n2", "tool": "echo", "args": {"label": "left", "value": "$n1.value", "sleep_s": 0.05}},
    {"id": "n3", "tool": "echo", "args": {"label": "right", "value": 3, "sleep_s": 0.05}, "depends_on": ["n1"]},
    {"id": "n4", "tool": "echo", "args": {"label": "join", "items": ["$n2.value", "$n3.value"]}},
)


def test_dependency_order_and_branches_overlap() -> None:
    outcome, recorder = execute(make_scheduler(make_registry()), DIAMOND)
    assert outcome.ok and outcome.steps == 4
    res = outcome.results
    order = [node for kind, node in recorder.events if kind == "started"]
    assert order[0] == "n1" and order[-1] == "n4"
    # n2 and n3 ran at the same time (recorded intervals intersect), both after n1, both before n4
    assert overlaps(res["n2"], res["n3"])
    for branch in ("n2", "n3"):
        assert res["n1"].finished_at <= res[branch].started_at  # type: ignore[operator]
        assert res[branch].finished_at <= res["n4"].started_at  # type: ignore[operator]
    # a node is committed (settled) before its dependants start
    assert recorder.events.index(("succeeded", "n1")) < recorder.events.index(("started", "n2"))
    assert res["n4"].output == {"label": "join", "value": 1, "items": [2, 3]}


def test_reference_resolution_types_and_metadata() -> None:
    outcome, _ = execute(make_scheduler(make_registry()), DIAMOND)
    n2 = outcome.results["n2"]
    assert n2.args is not None and n2.args["value"] == 2  # an int, not "2"
    assert n2.input_hash == sha256_json(n2.args)
    assert n2.output_sha256 == sha256_json(n2.output)
    assert n2.tool_version == "3" and n2.attempts == 1 and n2.duration_ms is not None
    assert "label='left'" in n2.summary


def test_missing_reference_field_fails_node_and_skips_dependants() -> None:
    plan = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "a"}},
        {"id": "n2", "tool": "echo", "args": {"label": "$n1.nope"}},
        {"id": "n3", "tool": "echo", "args": {"label": "after", "value": "$n2.value"}},
        {"id": "n4", "tool": "echo", "args": {"label": "independent"}},
    )
    state = FlakyState()
    outcome, _ = execute(make_scheduler(make_registry(state)), plan)
    assert not outcome.ok
    n2, n3 = outcome.results["n2"], outcome.results["n3"]
    assert n2.status == "failed" and n2.attempts == 0
    assert n2.error is not None and n2.error["type"] == "reference_error"
    assert "field 'nope' is missing in $n1" in str(n2.error["error"])
    assert n3.status == "skipped" and "upstream n2" in str(n3.error and n3.error["error"])
    assert outcome.results["n4"].status == "succeeded"  # other branches still finish
    assert sorted(state.calls) == ["a", "independent"]
    assert set(outcome.lost) == {"n2", "n3"}


def test_bad_arguments_never_reach_the_tool() -> None:
    state = FlakyState()
    plan = plan_of({"id": "n1", "tool": "echo", "args": {"label": "x", "value": "not a number", "extra": 1}})
    outcome, _ = execute(make_scheduler(make_registry(state)), plan)
    result = outcome.results["n1"]
    assert result.status == "failed" and result.error is not None
    assert result.error["type"] == "invalid_arguments" and result.error["retryable"] is False
    assert state.calls == []


def test_unknown_tool_fails_cleanly() -> None:
    outcome, _ = execute(make_scheduler(make_registry()), plan_of({"id": "n1", "tool": "nope", "args": {}}))
    assert outcome.results["n1"].error == {
        "error": "unknown tool 'nope' (known: broken, echo, flaky, hang, slow_echo, sync_echo)",
        "retryable": False,
        "type": "unknown_tool",
    }


def test_retry_with_growing_backoff_then_success() -> None:
    state, sleep = FlakyState(failures=3), FakeSleep()
    plan = plan_of({"id": "n1", "tool": "flaky", "args": {"label": "f"}})
    outcome, recorder = execute(make_scheduler(make_registry(state), sleep, backoff_base_s=0.1), plan)
    result = outcome.results["n1"]
    assert result.status == "succeeded" and result.attempts == 4
    assert len(sleep.delays) == 3 and sleep.delays == sorted(sleep.delays)
    assert all(later > 1.5 * earlier for earlier, later in zip(sleep.delays, sleep.delays[1:], strict=False))
    assert 0.1 <= sleep.delays[0] <= 0.11  # base, plus at most 10 % jitter
    assert [attempt for _, attempt, _ in recorder.retries] == [1, 2, 3]


def test_retries_stop_at_max_attempts() -> None:
    state, sleep = FlakyState(failures=10), FakeSleep()
    outcome, _ = execute(
        make_scheduler(make_registry(state), sleep), plan_of({"id": "n1", "tool": "flaky", "args": {"label": "f"}})
    )
    result = outcome.results["n1"]
    assert result.status == "failed" and result.attempts == 4 and len(sleep.delays) == 3
    assert result.error == {"error": "backend hiccup", "retryable": True, "type": "unavailable"}


def test_non_retryable_errors_are_not_retried() -> None:
    state, sleep = FlakyState(), FakeSleep()
    outcome, _ = execute(
        make_scheduler(make_registry(state), sleep), plan_of({"id": "n1", "tool": "broken", "args": {"label": "b"}})
    )
    result = outcome.results["n1"]
    assert result.status == "failed" and result.attempts == 1 and sleep.delays == []
    assert result.error is not None and result.error["type"] == "tool_exception" and not result.error["retryable"]
    assert state.calls == ["b"]


def test_timeout_is_retryable_and_bounded() -> None:
    state, sleep = FlakyState(), FakeSleep()
    outcome, _ = execute(
        make_scheduler(make_registry(state), sleep), plan_of({"id": "n1", "tool": "hang", "args": {"label": "h"}})
    )
    result = outcome.results["n1"]
    assert result.status == "failed" and result.attempts == 2 and len(sleep.delays) == 1
    assert result.error is not None and result.error["type"] == "timeout" and result.error["retryable"] is True


def test_circuit_breaker_opens_then_fails_fast_then_recovers() -> None:
    now = [0.0]
    breakers = BreakerBoard(threshold=3, cooldown_s=10.0, clock=lambda: now[0])
    state = FlakyState(failures=100)
    scheduler = DagScheduler(
        make_registry(state), make_scheduler(make_registry()).config, breakers=breakers, sleep=FakeSleep()
    )
    one = plan_of({"id": "n1", "tool": "flaky", "args": {"label": "a"}})
    first, _ = execute(scheduler, one)
    assert first.results["n1"].attempts == 3  # the 3rd consecutive failure opened the breaker
    assert breakers.states() == {"flaky": "open"}
    second, _ = execute(scheduler, one)
    assert second.results["n1"].error is not None and second.results["n1"].error["type"] == "circuit_open"
    assert second.results["n1"].attempts == 0 and len(state.calls) == 3  # failed fast: tool not called
    now[0] = 11.0  # cool-down over: half-open, one call goes through and succeeds
    state.failures_left = 0
    third, _ = execute(scheduler, one)
    assert third.results["n1"].status == "succeeded" and breakers.states() == {"flaky": "closed"}


def test_fallback_stands_in_for_failed_primary() -> None:
    plan = plan_of(
        {"id": "n1", "tool": "broken", "args": {"label": "primary"}, "fallback": "n2"},
        {"id": "n2", "tool": "echo", "args": {"label": "standby", "value": 9}},
        {"id": "n3", "tool": "echo", "args": {"label": "use", "value": "$n1.value"}},
    )
    outcome, _ = execute(make_scheduler(make_registry()), plan)
    assert outcome.ok
    assert outcome.results["n1"].status == "failed"
    assert outcome.results["n2"].fallback_for == "n1"
    assert outcome.results["n3"].output == {"label": "use", "value": 9, "items": [9]}


def test_standby_does_not_run_when_primary_succeeds() -> None:
    state = FlakyState()
    plan = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "primary"}, "fallback": "n2"},
        {"id": "n2", "tool": "echo", "args": {"label": "standby"}},
    )
    outcome, _ = execute(make_scheduler(make_registry(state)), plan)
    assert outcome.ok and "n2" not in outcome.results and state.calls == ["primary"]


def test_failed_fallback_skips_dependants() -> None:
    plan = plan_of(
        {"id": "n1", "tool": "broken", "args": {"label": "p"}, "fallback": "n2"},
        {"id": "n2", "tool": "broken", "args": {"label": "s"}},
        {"id": "n3", "tool": "echo", "args": {"label": "$n1.label"}},
    )
    outcome, _ = execute(make_scheduler(make_registry()), plan)
    assert not outcome.ok and outcome.results["n3"].status == "skipped"


def test_step_cap_stops_dispatching() -> None:
    state = FlakyState()
    plan = plan_of(
        *(
            {"id": f"n{i}", "tool": "echo", "args": {"label": f"s{i}"}, "depends_on": [f"n{i - 1}"] if i > 1 else []}
            for i in range(1, 6)
        )
    )
    outcome, _ = execute(make_scheduler(make_registry(state)), plan, max_steps=2)
    assert state.calls == ["s1", "s2"] and outcome.steps == 2 and not outcome.ok
    assert outcome.stop is not None and outcome.stop["type"] == "step_cap"
    assert [outcome.results[f"n{i}"].status for i in range(3, 6)] == ["skipped"] * 3
    assert outcome.results["n3"].error is not None and outcome.results["n3"].error["type"] == "step_cap"


def test_run_wall_time_cap_cancels_running_nodes() -> None:
    plan = plan_of(
        {"id": "n1", "tool": "echo", "args": {"label": "long", "sleep_s": 5}},
        {"id": "n2", "tool": "echo", "args": {"label": "after"}, "depends_on": ["n1"]},
    )
    outcome, _ = execute(make_scheduler(make_registry()), plan, max_seconds=0.05)
    assert outcome.stop is not None and outcome.stop["type"] == "run_timeout"
    assert outcome.results["n1"].status == "failed" and outcome.results["n2"].status == "skipped"


def serial(outcome: RoundOutcome) -> bool:
    results = sorted(outcome.results.values(), key=lambda r: r.started_at or 0)
    return all(not overlaps(a, b) for a, b in zip(results, results[1:], strict=False))


def test_slow_tools_and_concurrency_limits_serialise_calls() -> None:
    slow = plan_of(*({"id": f"n{i}", "tool": "slow_echo", "args": {"label": f"s{i}"}} for i in range(1, 4)))
    assert serial(execute(make_scheduler(make_registry()), slow)[0])
    wide = plan_of(*({"id": f"n{i}", "tool": "echo", "args": {"label": f"e{i}", "sleep_s": 0.02}} for i in range(1, 4)))
    assert not serial(execute(make_scheduler(make_registry()), wide)[0])  # unlimited: they overlap
    assert serial(execute(make_scheduler(make_registry(), max_parallel=1), wide)[0])
    assert serial(execute(make_scheduler(make_registry(), class_limits={"default": 1}), wide)[0])


def test_sync_tools_run_in_threads() -> None:
    outcome, _ = execute(
        make_scheduler(make_registry()), plan_of({"id": "n1", "tool": "sync_echo", "args": {"label": "s", "value": 4}})
    )
    assert outcome.results["n1"].output == {"label": "s", "value": 4, "items": [4]}


def test_completed_results_are_not_rerun_and_reuse_by_input_hash() -> None:
    state = FlakyState()
    scheduler = make_scheduler(make_registry(state))
    first, _ = execute(scheduler, DIAMOND)
    state.calls.clear()
    # resume: n1 and n2 already committed
    resumed, _ = execute(scheduler, DIAMOND, completed={k: first.results[k] for k in ("n1", "n2")})
    assert resumed.ok and sorted(state.calls) == ["join", "right"]
    state.calls.clear()
    # re-plan: identical (tool, version, args) results are reused without a call
    reusable = {key: r for r in first.results.values() if (key := reuse_key(r)) is not None}
    reused, _ = execute(scheduler, DIAMOND, round_=1, reusable=reusable)
    assert reused.ok and state.calls == [] and reused.steps == 0
    assert reused.results["n4"].reused_from == "r0/n4" and reused.results["n4"].round == 1

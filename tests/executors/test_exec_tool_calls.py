"""Calls a run hands to its caller, on both store backends (SQLite and a real PostgreSQL): a client tool's
node pauses the run in `requires_action` (durably: a new service on the same store leaves it paused)
after the rest of the round ran; `tool_call_required` announces it once; the first answer continues
the run in the answering service and later answers are refused; `ask_user` waits for a person's
answer; an unanswered call expires and its node fails like any other; an answer given while the
run still runs is picked up before it could pause."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from exec_helpers import FlakyState, make_registry, make_scheduler, plan_of, run

from executors.registry import ToolRegistry
from executors.runs import RunService
from executors.sources.client_tools import ASK_USER_TOOL, client_tool, pausing_spec
from executors.sources.remote_spec import registry_with
from executors.stores import AlreadyAnswered, RunRecord, RunStore
from executors.tool_calls import NotAwaitingOutput
from executors.upkeep import take_over_orphans

StoreFactory = Callable[..., RunStore]
SHIP = {
    "type": "function",
    "function": {
        "name": "ship_parcel",
        "description": "Ship a parcel (the calling app does it).",
        "parameters": {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
        "output_schema": {"type": "object", "properties": {"tracking": {"type": "string"}}},
    },
}
PLAN = plan_of(
    {"id": "n1", "tool": "echo", "args": {"label": "pack", "value": 3}},
    {"id": "n2", "tool": "ship_parcel", "args": {"label": "$n1.label"}},
    {"id": "n3", "tool": "echo", "args": {"label": "weather"}},
    {"id": "n4", "tool": "echo", "args": {"label": "$n2.tracking"}},
)


def no_check(schema: dict[str, Any]) -> Callable[[Any], list[str]]:
    return lambda value: []


class FixedTools:
    """The run's tools: the test tools plus the caller's `ship_parcel` and `ask_user`."""

    def __init__(self, state: FlakyState, timeout_s: float = 60.0) -> None:
        specs = [
            pausing_spec(client_tool(SHIP), pause="client", schema_check=no_check, answer_timeout_s=timeout_s),
            pausing_spec(ASK_USER_TOOL, pause="ask_user", schema_check=no_check, answer_timeout_s=timeout_s),
        ]
        self.registry: ToolRegistry = registry_with(make_registry(state), specs)

    async def registry_for(self, record: RunRecord) -> ToolRegistry:
        return self.registry

    def catalog_for(self, record: RunRecord) -> list[dict[str, Any]]:
        return [SHIP]


def service(store: RunStore, state: FlakyState, timeout_s: float = 60.0) -> RunService:
    return RunService(store, make_scheduler(make_registry(state)), tools=FixedTools(state, timeout_s))


async def wait_status(svc: RunService, run_id: str, *statuses: str) -> Any:
    for _ in range(400):
        view = await svc.get("alice", run_id)
        if view is not None and view.status in statuses:
            return view
        await asyncio.sleep(0.025)
    raise AssertionError(f"run never reached {statuses}")


def test_a_client_tool_pauses_the_run_until_its_caller_answers(make_store: StoreFactory) -> None:
    state = FlakyState()

    async def go() -> None:
        store = make_store()
        first = service(store, state)
        try:
            run_id = await first.start("alice", "ship it", PLAN, tools={"client": [SHIP]})
            paused = await wait_status(first, run_id, "requires_action")
            assert sorted(state.calls) == ["pack", "weather"]  # the rest of the round ran first
            assert [c["node_id"] for c in paused.action["calls"]] == ["n2"]
            assert paused.action["calls"][0]["args"] == {"label": "pack"}  # references resolved
            await first.aclose()
            second = service(store, state)  # a restart: still paused, its sweep takes nothing over
            assert await take_over_orphans(second) == []
            assert (await wait_status(second, run_id, "requires_action")).status == "requires_action"
            with pytest.raises(NotAwaitingOutput):
                await second.answer_tool_call("alice", run_id, "n3", output={}, by="alice")
            await second.answer_tool_call("alice", run_id, "n2", output={"tracking": "TRK-1"}, by="alice")
            done = await second.wait("alice", run_id)
            assert done.status == "succeeded", done.error
            n2 = next(r for r in done.nodes if r.node_id == "n2")
            assert n2.output == {"tracking": "TRK-1"} and n2.attempts == 1
            assert state.calls.count("TRK-1") == 1 and state.calls.count("pack") == 1
            with pytest.raises(NotAwaitingOutput):
                await second.answer_tool_call("alice", run_id, "n2", output={"tracking": "again"}, by="alice")
            types = [e.type for e in await store.events("alice", run_id)]
            assert types.count("tool_call_required") == 1 and "tool_output_received" in types
            await second.aclose()
        finally:
            await store.aclose()

    run(go())


def test_ask_user_waits_for_a_person_and_a_late_second_answer_is_refused(make_store: StoreFactory) -> None:
    state = FlakyState()
    plan = plan_of(
        {"id": "n1", "tool": "ask_user", "args": {"question": "Which date?"}},
        {"id": "n2", "tool": "echo", "args": {"label": "$n1.answer"}},
    )

    async def go() -> None:
        store = make_store()
        svc = service(store, state)
        try:
            run_id = await svc.start("alice", "book", plan, tools={"steps": ["ask_user"]})
            paused = await wait_status(svc, run_id, "requires_action")
            event = next(e for e in await store.events("alice", run_id) if e.type == "tool_call_required")
            assert event.data["question"] == "Which date?" and event.data["kind"] == "ask_user"
            assert paused.action["calls"][0]["kind"] == "ask_user"
            await svc.answer_tool_call("alice", run_id, "n1", output={"answer": "2027-06-20"}, by="alice")
            with pytest.raises((AlreadyAnswered, NotAwaitingOutput)):
                await svc.answer_tool_call("alice", run_id, "n1", output={"answer": "later"}, by="alice")
            done = await svc.wait("alice", run_id)
            assert done.status == "succeeded" and state.calls == ["2027-06-20"]
        finally:
            await svc.aclose()
            await store.aclose()

    run(go())


def test_an_unanswered_call_expires_and_its_node_fails(make_store: StoreFactory) -> None:
    state = FlakyState()

    async def go() -> None:
        store = make_store()
        svc = service(store, state, timeout_s=0.2)
        try:
            run_id = await svc.start("alice", "ship", PLAN, tools={"client": [SHIP]})
            await wait_status(svc, run_id, "requires_action")
            assert await svc.expire_unanswered() == []  # not due yet
            await asyncio.sleep(0.3)
            assert await svc.expire_unanswered() == [f"{run_id}/n2"]
            done = await svc.wait("alice", run_id)
            assert done.status == "failed"
            n2 = next(r for r in done.nodes if r.node_id == "n2")
            assert n2.error is not None and n2.error["type"] == "timeout"
            assert next(r for r in done.nodes if r.node_id == "n4").status == "skipped"
        finally:
            await svc.aclose()
            await store.aclose()

    run(go())


def test_an_answer_given_while_the_run_runs_is_used_without_a_pause(make_store: StoreFactory) -> None:
    """Two calls of the caller: the first answer continues the run; the second arrives while it runs
    again and is picked up before it could pause."""
    state = FlakyState()
    plan = plan_of(
        {"id": "n1", "tool": "ship_parcel", "args": {"label": "a"}},
        {"id": "n2", "tool": "ship_parcel", "args": {"label": "b"}},
        {"id": "n3", "tool": "echo", "args": {"label": "$n1.tracking", "items": [1]}},
    )

    async def go() -> None:
        store = make_store()
        svc = service(store, state)
        try:
            run_id = await svc.start("alice", "ship two", plan, tools={"client": [SHIP]})
            paused = await wait_status(svc, run_id, "requires_action")
            assert {c["node_id"] for c in paused.action["calls"]} == {"n1", "n2"}
            await asyncio.gather(
                svc.answer_tool_call("alice", run_id, "n1", output={"tracking": "T1"}, by="alice"),
                svc.answer_tool_call("alice", run_id, "n2", output={"tracking": "T2"}, by="alice"),
            )
            done = await svc.wait("alice", run_id)
            if done.status == "requires_action":  # the second answer found the run paused again
                done = await wait_status(svc, run_id, "succeeded", "failed")
            assert done.status == "succeeded", done.error
            assert {r.node_id: r.output for r in done.nodes if r.node_id != "n3"} == {
                "n1": {"tracking": "T1"},
                "n2": {"tracking": "T2"},
            }
            assert state.calls == ["T1"]
        finally:
            await svc.aclose()
            await store.aclose()

    run(go())

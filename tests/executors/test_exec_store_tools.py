"""The run store's tool concerns, on both backends (SQLite file, real PostgreSQL): each tenant's toolsets
(unique names, a per-tenant cap, another tenant's toolset does not exist), snapshots with revisions,
a run's recorded tool definitions, and the pause for tool calls the caller answers (first answer wins;
an answer given while the run still runs makes the driver run the round again instead of pausing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from exec_helpers import plan_of, run

from executors.errors import RunNotFound
from executors.stores import (
    AlreadyAnswered,
    RunRecord,
    RunStore,
    ToolAnswer,
    ToolsetExists,
    ToolsetRecord,
    TooManyToolsets,
)

PLAN = plan_of({"id": "n1", "tool": "lookup", "args": {"q": "x"}})
TOOLS = [{"name": "lookup", "remote_name": "lookup", "description": "d", "parameters": {"type": "object"}}]


def toolset(toolset_id: str, name: str, tenant: str = "alice") -> ToolsetRecord:
    return ToolsetRecord(
        toolset_id=toolset_id,
        tenant=tenant,
        name=name,
        kind="mcp",
        config={"url": "https://mcp.example/mcp"},
        credential="psc1.k1.sealed",
        tools=TOOLS,
        version="v1",
    )


def with_store(make_store: Callable[..., RunStore], body: Callable[[RunStore], Any]) -> None:
    async def go() -> None:
        store = make_store()
        try:
            await body(store)
        finally:
            await store.aclose()

    run(go())


def test_toolsets_are_per_tenant_unique_by_name_and_capped(make_store: Callable[..., RunStore]) -> None:
    async def body(store: RunStore) -> None:
        made = await store.create_toolset(toolset("ts_00000001", "inventory"), max_per_tenant=2)
        assert made.created_at > 0 and made.revision == 1 and made.tools == TOOLS
        with pytest.raises(ToolsetExists):
            await store.create_toolset(toolset("ts_00000002", "inventory"), max_per_tenant=2)
        await store.create_toolset(toolset("ts_00000003", "billing"), max_per_tenant=2)
        with pytest.raises(TooManyToolsets):
            await store.create_toolset(toolset("ts_00000004", "crm"), max_per_tenant=2)
        # the same name is free for another tenant, whose count is its own
        await store.create_toolset(toolset("ts_00000005", "inventory", tenant="bob"), max_per_tenant=2)
        assert [t.name for t in await store.list_toolsets("alice")] == ["billing", "inventory"]
        assert [t.toolset_id for t in await store.list_toolsets("bob")] == ["ts_00000005"]
        by_name = await store.get_toolset("alice", "inventory")
        assert by_name is not None and by_name.toolset_id == "ts_00000001"
        assert by_name.credential == "psc1.k1.sealed" and by_name.config == {"url": "https://mcp.example/mcp"}
        assert await store.get_toolset("bob", "ts_00000001") is None  # another tenant's id
        assert await store.delete_toolset("bob", "ts_00000001") is None
        assert await store.update_toolset_tools("bob", "ts_00000001", [], "v9") is None

    with_store(make_store, body)


def test_a_new_snapshot_counts_a_revision_only_when_the_tools_changed(make_store: Callable[..., RunStore]) -> None:
    async def body(store: RunStore) -> None:
        await store.create_toolset(toolset("ts_00000001", "inventory"), max_per_tenant=5)
        same = await store.update_toolset_tools("alice", "ts_00000001", TOOLS, "v1")
        assert same is not None and same.revision == 1
        changed = await store.update_toolset_tools("alice", "ts_00000001", [*TOOLS, *TOOLS], "v2")
        assert changed is not None and changed.revision == 2 and changed.version == "v2" and len(changed.tools) == 2
        deleted = await store.delete_toolset("alice", "inventory")
        assert deleted is not None and deleted.toolset_id == "ts_00000001"
        assert await store.get_toolset("alice", "ts_00000001") is None
        assert await store.delete_toolset("alice", "inventory") is None

    with_store(make_store, body)


def test_a_run_keeps_its_tool_definitions(make_store: Callable[..., RunStore]) -> None:
    recorded = {"toolsets": [{"toolset_id": "ts_00000001", "name": "inventory", "tools": TOOLS}], "client": []}

    async def body(store: RunStore) -> None:
        await store.create_run(
            RunRecord(run_id="r1", tenant="alice", request="q", plan=PLAN, tools=recorded), owner="a", ttl_s=30
        )
        again = await store.get_run("alice", "r1")
        assert again is not None and again.tools == recorded and again.action is None
        assert (await store.usage("alice")).stored_bytes > len(str(recorded))

    with_store(make_store, body)


def test_a_paused_run_is_moved_on_by_the_first_answer_only(make_store: Callable[..., RunStore]) -> None:
    action = {"round": 0, "calls": [{"node_id": "n1", "tool": "lookup", "input_hash": "h1"}]}

    async def body(store: RunStore) -> None:
        lease = await store.create_run(
            RunRecord(run_id="r1", tenant="alice", request="q", plan=PLAN), owner="a", ttl_s=30
        )
        paused = await store.pause_for_action(lease, action, round_=0, awaited=["n1"])
        assert paused is not None and paused.status == "requires_action" and paused.action == action
        assert [r.run_id for r in await store.runs_requiring_action()] == ["r1"]
        assert (await store.paused_counts())["requires_action"] == 1
        answer = ToolAnswer(round=0, node_id="n1", input_hash="h1", output={"v": 1}, by="alice")
        with pytest.raises(RunNotFound):
            await store.answer_tool_call("bob", "r1", answer, owner="b", ttl_s=30)
        moved = await store.answer_tool_call("alice", "r1", answer, owner="b", ttl_s=30)
        assert moved is not None and moved.owner == "b" and moved.epoch == lease.epoch + 1
        record = await store.get_run("alice", "r1")
        assert record is not None and record.status == "running" and record.driven
        with pytest.raises(AlreadyAnswered):
            await store.answer_tool_call("alice", "r1", answer.model_copy(update={"output": 2}), owner="c", ttl_s=30)
        kept = await store.tool_answers("alice", "r1", 0)
        assert [(a.node_id, a.output, a.by) for a in kept] == [("n1", {"v": 1}, "alice")]
        assert kept[0].answered_at > 0
        assert await store.runs_requiring_action() == []

    with_store(make_store, body)


def test_an_answer_that_arrives_while_the_run_runs_is_seen_before_it_pauses(
    make_store: Callable[..., RunStore],
) -> None:
    action = {"round": 0, "calls": [{"node_id": "n1"}, {"node_id": "n2"}]}

    async def body(store: RunStore) -> None:
        lease = await store.create_run(
            RunRecord(run_id="r1", tenant="alice", request="q", plan=PLAN), owner="a", ttl_s=30
        )
        early = ToolAnswer(round=0, node_id="n2", input_hash="h2", error={"error": "no", "type": "client_error"})
        assert await store.answer_tool_call("alice", "r1", early, owner="b", ttl_s=30) is None  # running: no reopen
        assert await store.pause_for_action(lease, action, round_=0, awaited=["n1", "n2"]) is None
        record = await store.get_run("alice", "r1")
        assert record is not None and record.status == "running" and record.lease_owner == "a"
        assert await store.pause_for_action(lease, action, round_=1, awaited=["n2"]) is not None  # another round

    with_store(make_store, body)

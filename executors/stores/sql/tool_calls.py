"""`RunToolCalls` in SQL: pausing a run for the tool calls its caller answers, and the answers (both dialects).

Two writers meet here: the run's driver, pausing because calls are unanswered, and the calling app,
answering one. Both take the run's tool-call lock first, so exactly one of two orders happens: the
answer is recorded first (the driver then sees it and runs the round again instead of pausing), or
the pause is recorded first (the answer then finds the run paused and moves it back to running
under the answering process's lease). An answer never waits unseen beside a paused run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from executors.stores.errors import AlreadyAnswered
from executors.stores.records import Lease, RunRecord, RunUpdate, dumps
from executors.stores.sql.dialect import Lock, Program, Statement, in_list
from executors.stores.sql.leases import FENCE, fence_error, fence_params, require_run
from executors.stores.sql.part import SqlPart
from executors.stores.sql.rows import RUN_COLUMNS, SELECT_RUN, loads, run_from_row, text_bytes
from executors.stores.sql.steering import reopen_program
from executors.stores.tool_records import ToolAnswer

ANSWER_COLUMNS = "round, node_id, input_hash, output_json, error_json, answered_by, answered_at"


def _lock(run_id: str) -> Lock:
    return Lock("tool-calls:" + run_id)


def answer_from_row(row: Any) -> ToolAnswer:
    return ToolAnswer(
        round=row[0],
        node_id=row[1],
        input_hash=row[2],
        output=loads(row[3]),
        error=loads(row[4]),
        by=row[5],
        answered_at=row[6],
    )


def _pause(lease: Lease, action: dict[str, Any], round_: int, awaited: Sequence[str]) -> Program[RunRecord | None]:
    yield _lock(lease.run_id)
    if awaited:
        marks, params = in_list("node", list(awaited))
        answered = (
            yield Statement(
                f"SELECT 1 FROM tool_answers WHERE run_id = :run_id AND round = :round AND node_id IN {marks}",
                {"run_id": lease.run_id, "round": round_, **params},
            )
        ).first()
        if answered is not None:
            return None  # answered meanwhile: the driver runs the round again instead of pausing
    action_json = dumps(action)
    rows = yield Statement(
        "UPDATE runs SET status = 'requires_action', action_json = :action_json, updated_at = :now,"
        f" bytes = bytes + :added WHERE {FENCE} RETURNING {RUN_COLUMNS}, :now",
        {**fence_params(lease), "action_json": action_json, "added": text_bytes(action_json)},
    )
    row = rows.first()
    if row is None:
        raise (yield from fence_error(lease))
    return run_from_row(row)


def _answer(tenant: str, run_id: str, answer: ToolAnswer, owner: str, ttl_s: float) -> Program[Lease | None]:
    yield _lock(run_id)
    yield from require_run(tenant, run_id)
    output_json, error_json = dumps(answer.output), dumps(answer.error)
    inserted = (
        yield Statement(
            f"INSERT INTO tool_answers (run_id, {ANSWER_COLUMNS}) VALUES (:run_id, :round, :node_id, :input_hash,"
            " :output_json, :error_json, :answered_by, :now) ON CONFLICT (run_id, round, node_id) DO NOTHING",
            {
                "run_id": run_id,
                "round": answer.round,
                "node_id": answer.node_id,
                "input_hash": answer.input_hash,
                "output_json": output_json,
                "error_json": error_json,
                "answered_by": answer.by,
            },
        )
    ).rowcount
    if inserted != 1:
        raise AlreadyAnswered(f"the call of node {answer.node_id} in round {answer.round} has been answered already")
    yield Statement(
        "UPDATE runs SET bytes = bytes + :added WHERE run_id = :run_id",
        {"run_id": run_id, "added": text_bytes(output_json) + text_bytes(error_json)},
    )
    return (yield from reopen_program(tenant, run_id, owner, ttl_s, "requires_action", RunUpdate()))


def _answers(tenant: str, run_id: str, round_: int) -> Program[list[ToolAnswer]]:
    yield from require_run(tenant, run_id)
    rows = yield Statement(
        f"SELECT {ANSWER_COLUMNS} FROM tool_answers WHERE run_id = :run_id AND round = :round ORDER BY answered_at",
        {"run_id": run_id, "round": round_},
    )
    return [answer_from_row(row) for row in rows.rows]


def _requiring_action(limit: int) -> Program[list[RunRecord]]:
    rows = yield Statement(
        SELECT_RUN + " WHERE status = 'requires_action' ORDER BY updated_at LIMIT :limit", {"limit": limit}
    )
    return [run_from_row(row) for row in rows.rows]


def _paused_counts() -> Program[dict[str, int]]:
    rows = yield Statement(
        "SELECT status, COUNT(*) FROM runs WHERE status IN ('awaiting_approval', 'requires_action') GROUP BY status"
    )
    counts = {"awaiting_approval": 0, "requires_action": 0}
    counts.update({str(row[0]): int(row[1]) for row in rows.rows})
    return counts


class SqlToolCalls(SqlPart):
    async def pause_for_action(
        self, lease: Lease, action: dict[str, Any], *, round_: int, awaited: Sequence[str]
    ) -> RunRecord | None:
        return await self.db.write(_pause(lease, action, round_, awaited))

    async def answer_tool_call(
        self, tenant: str, run_id: str, answer: ToolAnswer, *, owner: str, ttl_s: float
    ) -> Lease | None:
        return await self.db.write(_answer(tenant, run_id, answer, owner, ttl_s))

    async def tool_answers(self, tenant: str, run_id: str, round_: int) -> list[ToolAnswer]:
        return await self.db.read(_answers(tenant, run_id, round_))

    async def runs_requiring_action(self, *, limit: int = 100) -> list[RunRecord]:
        return await self.db.read(_requiring_action(limit))

    async def paused_counts(self) -> dict[str, int]:
        return await self.db.read(_paused_counts())

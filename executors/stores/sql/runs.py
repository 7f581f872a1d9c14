"""`RunRecords` in SQL: runs, their plan history and node results (written once, both dialects)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.plan import Plan
from executors.observation import NodeResult
from executors.stores.caps import new_run_error
from executors.stores.records import EscalationState, Lease, RunRecord, RunStatus, RunUpdate, TenantQuota, dumps
from executors.stores.sql.dialect import Lock, Program, Statement
from executors.stores.sql.leases import FENCE, fence_error, fence_params, fenced, require_run
from executors.stores.sql.part import SqlPart
from executors.stores.sql.retention import usage_of
from executors.stores.sql.rows import (
    LIVE,
    RUN_COLUMNS,
    SELECT_RUN,
    result_bytes,
    run_from_row,
    text_bytes,
)

SAVE_PLAN = (
    "INSERT INTO run_plans (run_id, round, plan_json, created_at) VALUES (:run_id, :round, :plan_json, :now)"
    " ON CONFLICT DO NOTHING"
)
"""Keep a round's plan in the history (a round's first plan stays)."""


@dataclass(frozen=True)
class SetClause:
    """The assignments of a `RunUpdate` (`, column = :set_column ...`), and what they add to `runs.bytes`."""

    sql: str
    params: dict[str, Any]
    plan_json: str | None
    added_bytes: int


def set_clause(update: RunUpdate) -> SetClause:
    """Only the fields given (not None) are set."""
    plan_json = None if update.plan is None else update.plan.model_dump_json()
    texts = {
        "error_json": dumps(update.error),
        "approval_json": dumps(update.approval),
        "escalation_json": dumps(update.escalation),
        "action_json": dumps(update.action),
    }
    escalation = None if update.escalation is None else str(update.escalation.get("state", "open"))
    columns = {
        "status": update.status,
        "round": update.round,
        "replans": update.replans,
        "plan_json": plan_json,
        **texts,
        "escalation": escalation,
        "budget_round": update.budget_round,
    }
    given = {column: value for column, value in columns.items() if value is not None}
    added = 2 * text_bytes(plan_json) + sum(text_bytes(text) for text in texts.values())
    return SetClause(
        "".join(f", {column} = :set_{column}" for column in given),
        {f"set_{column}": value for column, value in given.items()},
        plan_json,
        added,
    )


def save_plan(run_id: str, update: RunUpdate, plan_json: str | None) -> Program[None]:
    if plan_json is not None and update.round is not None:
        yield Statement(SAVE_PLAN, {"run_id": run_id, "round": update.round, "plan_json": plan_json})


def _create(record: RunRecord, owner: str, ttl_s: float, quota: TenantQuota | None) -> Program[Lease]:
    if quota is not None:  # the quota check and the insert are one step for all replicas
        yield Lock(record.tenant)
        problem = new_run_error((yield from usage_of(record.tenant)), quota)
        if problem is not None:
            raise problem
    plan_json = record.plan.model_dump_json()
    tools_json = dumps(record.tools)
    rows = yield Statement(
        "INSERT INTO runs (run_id, tenant, request, plan_json, status, round, replans, error_json, created_at,"
        " updated_at, lease_owner, lease_epoch, lease_expires_at, bytes, webhook_url, planner_json, tools_json)"
        " VALUES (:run_id, :tenant, :request, :plan_json, :status, :round, :replans, :error_json, :now, :now,"
        " :owner, 1, :now + :ttl_s, :bytes, :webhook_url, :planner_json, :tools_json)"
        " RETURNING lease_expires_at, created_at",
        {
            "run_id": record.run_id,
            "tenant": record.tenant,
            "request": record.request,
            "plan_json": plan_json,
            "status": record.status,
            "round": record.round,
            "replans": record.replans,
            "error_json": dumps(record.error),
            "owner": owner,
            "ttl_s": ttl_s,
            "bytes": 2 * text_bytes(plan_json) + text_bytes(record.request) + text_bytes(tools_json),
            "webhook_url": record.webhook_url,
            "planner_json": dumps(record.planner),
            "tools_json": tools_json,
        },
    )
    expires, created = rows.one()
    yield Statement(
        "INSERT INTO run_plans (run_id, round, plan_json, created_at) VALUES (:run_id, :round, :plan_json, :created)",
        {"run_id": record.run_id, "round": record.round, "plan_json": plan_json, "created": created},
    )
    return Lease(record.tenant, record.run_id, owner, 1, float(expires))


def _get(tenant: str, run_id: str) -> Program[RunRecord | None]:
    row = (
        yield Statement(
            SELECT_RUN + " WHERE run_id = :run_id AND tenant = :tenant", {"run_id": run_id, "tenant": tenant}
        )
    ).first()
    return None if row is None else run_from_row(row)


def _list(
    tenant: str, limit: int, status: RunStatus | None, escalation: EscalationState | None, before: str | None
) -> Program[list[RunRecord]]:
    conditions = ["tenant = :tenant"]
    params: dict[str, Any] = {"tenant": tenant, "limit": limit}
    if status is not None:
        conditions.append("status = :status")
        params["status"] = "running" if status == "interrupted" else status
        if status == "running":
            conditions.append(LIVE)
        elif status == "interrupted":
            conditions.append(f"NOT COALESCE({LIVE}, FALSE)")
    if escalation is not None:
        conditions.append("escalation = :escalation")
        params["escalation"] = escalation
    if before is not None:  # newest first: page on from that run
        conditions.append(
            "(created_at, run_id) < (SELECT created_at, run_id FROM runs WHERE run_id = :before AND tenant = :tenant)"
        )
        params["before"] = before
    rows = yield Statement(
        SELECT_RUN + " WHERE " + " AND ".join(conditions) + " ORDER BY created_at DESC, run_id DESC LIMIT :limit",
        params,
    )
    return [run_from_row(row) for row in rows.rows]


def _update(lease: Lease, update: RunUpdate) -> Program[RunRecord]:
    clause = set_clause(update)
    rows = yield Statement(
        f"UPDATE runs SET updated_at = :now, bytes = bytes + :added{clause.sql} WHERE {FENCE}"
        f" RETURNING {RUN_COLUMNS}, :now",
        {**fence_params(lease), **clause.params, "added": clause.added_bytes},
    )
    row = rows.first()
    if row is None:
        raise (yield from fence_error(lease))
    yield from save_plan(lease.run_id, update, clause.plan_json)
    return run_from_row(row)


def _plans(tenant: str, run_id: str) -> Program[list[tuple[int, Plan]]]:
    yield from require_run(tenant, run_id)
    rows = yield Statement(
        "SELECT round, plan_json FROM run_plans WHERE run_id = :run_id ORDER BY round", {"run_id": run_id}
    )
    return [(int(row[0]), Plan.model_validate_json(row[1])) for row in rows.rows]


INSERT_RESULT = (
    "INSERT INTO node_results (run_id, round, node_id, tool, status, attempts, input_hash, output_sha256,"
    " output_json, result_json, committed_at) SELECT :run_id, :round, :node_id, :tool, :status, :attempts,"
    " :input_hash, :output_sha256, :output_json, :result_json, :now"
    f" WHERE EXISTS (SELECT 1 FROM runs WHERE {FENCE}) ON CONFLICT (run_id, round, node_id) DO NOTHING"
)
"""A node result, inserted only while the writer's lease holds (the first one wins)."""


def _save_result(lease: Lease, result: NodeResult) -> Program[NodeResult]:
    """The insert is skipped unless the lease holds (an unknown run stays `RunNotFound`, not a foreign
    key error); the fence then counts the bytes only when this result is the one committed."""
    result_json = result.model_dump_json()
    output_json = dumps(result.output)
    key = {"run_id": lease.run_id, "round": result.round, "node_id": result.node_id}
    inserted = (
        yield Statement(
            INSERT_RESULT,
            {
                **fence_params(lease),
                **key,
                "tool": result.tool,
                "status": result.status,
                "attempts": result.attempts,
                "input_hash": result.input_hash,
                "output_sha256": result.output_sha256,
                "output_json": output_json,
                "result_json": result_json,
            },
        )
    ).rowcount == 1
    yield from fenced(lease, result_bytes(result_json, output_json) if inserted else 0)
    if inserted:
        return result
    rows = yield Statement(
        "SELECT result_json FROM node_results WHERE run_id = :run_id AND round = :round AND node_id = :node_id", key
    )
    return NodeResult.model_validate_json(rows.one()[0])


def _results(tenant: str, run_id: str, round_: int | None) -> Program[list[NodeResult]]:
    yield from require_run(tenant, run_id)
    only_round = "" if round_ is None else " AND round = :round"
    rows = yield Statement(
        f"SELECT result_json FROM node_results WHERE run_id = :run_id{only_round}"
        " ORDER BY round, committed_at, node_id",
        {"run_id": run_id, "round": round_},
    )
    return [NodeResult.model_validate_json(row[0]) for row in rows.rows]


class SqlRuns(SqlPart):
    async def create_run(
        self, record: RunRecord, *, owner: str, ttl_s: float, quota: TenantQuota | None = None
    ) -> Lease:
        return await self.db.write(_create(record, owner, ttl_s, quota))

    async def get_run(self, tenant: str, run_id: str) -> RunRecord | None:
        return await self.db.read(_get(tenant, run_id))

    async def list_runs(
        self,
        tenant: str,
        *,
        limit: int = 50,
        status: RunStatus | None = None,
        escalation: EscalationState | None = None,
        before: str | None = None,
    ) -> list[RunRecord]:
        return await self.db.read(_list(tenant, limit, status, escalation, before))

    async def update_run(self, lease: Lease, update: RunUpdate) -> RunRecord:
        return await self.db.write(_update(lease, update))

    async def plans(self, tenant: str, run_id: str) -> list[tuple[int, Plan]]:
        return await self.db.read(_plans(tenant, run_id))

    async def save_result(self, lease: Lease, result: NodeResult) -> NodeResult:
        return await self.db.write(_save_result(lease, result))

    async def results(self, tenant: str, run_id: str, *, round_: int | None = None) -> list[NodeResult]:
        return await self.db.read(_results(tenant, run_id, round_))

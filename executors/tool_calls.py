"""Tool calls a run waits for its caller to answer: the pending calls, the answers, and their expiry.

When a round can go no further without the answers to calls handed to the caller (the calling app's
own tools, `ask_user`: executors.sources.client_tools), the driver announces each new call as a
`tool_call_required` event and pauses the run in `requires_action`, durably: the pending calls
(node, tool, resolved arguments, input hash, expiry) are the run's `action`, the run holds no lease,
and only an answer moves it on. An answer (`POST /v1/runs/{id}/tool_outputs`) is recorded once —
the first one wins — and hands the paused run to a driver in the answering process, which runs the
round again: the answered node settles with the output, its dependants run. A call nobody answers
before it expires is answered by the expiry sweep with a `timeout` error, and the node fails like
any other (fallback, re-plan).

This module is the state and the answering actions; the driver pauses, the scheduler settles nodes
from the answers (`DagScheduler.run_plan(answers=...)`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from executors.errors import ExecutorError, RunNotFound, structured_error
from executors.stores import AlreadyAnswered, Lease, RunRecord, ToolAnswer

MAX_ERROR_CHARS = 2000


class PendingCall(BaseModel):
    """A call handed to the caller: what to execute, and until when an answer is awaited."""

    model_config = ConfigDict(extra="forbid")

    node_id: str
    tool: str
    kind: Literal["client", "ask_user"]
    args: dict[str, JsonValue] = Field(description="Arguments with every reference resolved.")
    input_hash: str
    requested_at: float
    expires_at: float

    def event_data(self) -> dict[str, Any]:
        """What the `tool_call_required` event says (the question itself for `ask_user`)."""
        data: dict[str, Any] = {
            "node_id": self.node_id,
            "tool": self.tool,
            "kind": self.kind,
            "arguments": self.args,
            "expires_at": self.expires_at,
        }
        if self.kind == "ask_user":
            data["question"] = self.args.get("question")
        return data


class ActionState(BaseModel):
    """What a paused run's record keeps (`RunRecord.action`): the round and its unanswered calls."""

    model_config = ConfigDict(extra="forbid")

    round: int
    calls: list[PendingCall] = Field(default_factory=list)

    @classmethod
    def of(cls, record: RunRecord) -> ActionState | None:
        return None if record.action is None else cls.model_validate(record.action)

    def find(self, node_id: str, input_hash: str | None = None) -> PendingCall | None:
        for call in self.calls:
            if call.node_id == node_id and (input_hash is None or call.input_hash == input_hash):
                return call
        return None


class NotAwaitingOutput(ExecutorError):
    """The run does not wait for an answer to this node's call (never asked, or answered and moved on)."""

    kind = "not_awaiting_output"
    status = 409
    type = "invalid_request_error"
    param = "node_id"


def answer_error(message: str, kind: str = "client_error") -> dict[str, Any]:
    """The node's structured error for an answer that reports a failure (not retried: the caller decided)."""
    return structured_error(message[:MAX_ERROR_CHARS], kind)


class AnswerRecords(Protocol):
    async def get_run(self, tenant: str, run_id: str) -> RunRecord | None: ...

    async def answer_tool_call(
        self, tenant: str, run_id: str, answer: ToolAnswer, *, owner: str, ttl_s: float
    ) -> Lease | None: ...

    async def runs_requiring_action(self, *, limit: int = 100) -> list[RunRecord]: ...


Launch = Callable[[Lease, dict[str, Any]], None]
"""Drive the run whose lease an answer just acquired, announcing the answer first."""


class ToolCallActions:
    """Answering a paused run's calls (the caller, or the expiry sweep)."""

    def __init__(
        self,
        records: AnswerRecords,
        launch: Launch,
        *,
        owner: Callable[[], str],
        ttl_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._records = records
        self._launch = launch
        self._owner = owner
        self._ttl_s = ttl_s
        self._clock = clock

    async def pending(self, tenant: str, run_id: str, node_id: str) -> tuple[RunRecord, PendingCall]:
        """The run and the call of `node_id` it waits for; `RunNotFound`, or `NotAwaitingOutput`."""
        record = await self._records.get_run(tenant, run_id)
        if record is None:
            raise RunNotFound(f"run {run_id!r} not found")
        state = ActionState.of(record)
        call = None if state is None or state.round != record.round else state.find(node_id)
        if call is None or record.status not in ("requires_action", "running"):
            raise NotAwaitingOutput(f"run {run_id!r} does not wait for an answer for node {node_id!r}")
        return record, call

    async def answer(
        self,
        tenant: str,
        run_id: str,
        node_id: str,
        *,
        output: Any = None,
        error: str | None = None,
        by: str | None,
    ) -> ToolAnswer:
        """Record the answer (checked by the caller against the tool's output schema) and continue the run
        here when it was paused; `AlreadyAnswered` when another answer was first."""
        record, call = await self.pending(tenant, run_id, node_id)
        answer = ToolAnswer(
            round=record.round,
            node_id=node_id,
            input_hash=call.input_hash,
            output=None if error is not None else output,
            error=None if error is None else answer_error(error),
            by=by,
        )
        lease = await self._records.answer_tool_call(tenant, run_id, answer, owner=self._owner(), ttl_s=self._ttl_s)
        if lease is not None:
            announced = {"node_id": node_id, "tool": call.tool, "by": by, "error": answer.error is not None}
            self._launch(lease, announced)
        return answer

    async def expire_overdue(self) -> list[str]:
        """Answer every call past its expiry with a `timeout` error (the upkeep sweep); the expired nodes
        as `run_id/node_id`."""
        now = self._clock()
        expired: list[str] = []
        for record in await self._records.runs_requiring_action():
            state = ActionState.of(record)
            for call in overdue(state.calls if state is not None else (), now):
                message = (
                    f"nobody answered the {call.tool} call within its time ({call.expires_at - call.requested_at:g} s)"
                )
                answer = ToolAnswer(
                    round=record.round,
                    node_id=call.node_id,
                    input_hash=call.input_hash,
                    error=answer_error(message, "timeout"),
                )
                try:
                    lease = await self._records.answer_tool_call(
                        record.tenant, record.run_id, answer, owner=self._owner(), ttl_s=self._ttl_s
                    )
                except (AlreadyAnswered, RunNotFound):
                    continue  # answered meanwhile, or purged
                if lease is not None:
                    self._launch(lease, {"node_id": call.node_id, "tool": call.tool, "by": None, "expired": True})
                expired.append(f"{record.run_id}/{call.node_id}")
        return expired


def overdue(calls: Iterable[PendingCall], now: float) -> list[PendingCall]:
    return [call for call in calls if call.expires_at <= now]

"""`POST /v1/runs/{id}/tool_outputs`: the calling app (or a person, through the web UI) answers a call its
run handed out — the app's own tool, or `ask_user`.

The run must be waiting for that node's call (409 `not_awaiting_output` otherwise; 409
`already_answered` when another answer was first); the output is checked against the tool's output
schema (400 `invalid_output`, the run keeps waiting); the answer is recorded once and the paused run
continues at once in this gateway. Tenant-scoped: another tenant's run is a 404.
"""

from __future__ import annotations

from typing import Any

from executors.runs import RunService
from serving.auth import Principal
from serving.errors import InvalidRequestError, NotFoundError
from serving.runs.protocol import ToolOutputCreate
from serving.toolsets.run_tools import RunToolsService


class InvalidOutput(InvalidRequestError):
    code = "invalid_output"
    param = "output"


class ToolOutputGateway:
    def __init__(self, runs: RunService, run_tools: RunToolsService) -> None:
        self.runs = runs
        self._run_tools = run_tools

    async def answer(self, who: Principal, run_id: str, body: ToolOutputCreate) -> dict[str, Any]:
        record, call = await self.runs.tool_calls.pending(who.tenant, run_id, body.node_id)
        if body.error is None:
            tool = self._run_tools.answered_tool(record, call.tool)
            if tool is None:
                raise InvalidRequestError(f"the run has no caller tool {call.tool!r}", param="node_id")
            problems = await self._run_tools.check_output(who.tenant, tool, body.output)
            if problems:
                raise InvalidOutput(f"the output does not match {call.tool}'s output schema: {'; '.join(problems[:3])}")
        answer = await self.runs.answer_tool_call(
            who.tenant, run_id, body.node_id, output=body.output, error=body.error, by=who.tenant
        )
        view = await self.runs.get(who.tenant, run_id)
        if view is None:  # purged meanwhile
            raise NotFoundError(f"run {run_id!r} not found", code="run_not_found")
        return {
            "object": "tool_output",
            "run_id": run_id,
            "node_id": answer.node_id,
            "round": answer.round,
            "accepted": True,
            "status": view.status,
        }

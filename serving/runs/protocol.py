"""Request bodies and list shapes of the run endpoints."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from contract.plan import Plan
from executors.stores import RunRecord

RunListStatus = Literal[
    "running", "succeeded", "failed", "interrupted", "awaiting_approval", "requires_action", "escalated"
]
RUN_ID_PATTERN = r"^run_[0-9a-f]{8,40}$"
ToolsetName = Annotated[str, Field(min_length=1, max_length=48)]


class RunCreate(BaseModel):
    """POST /v1/runs: a request to plan and execute, or a given plan to execute."""

    model_config = ConfigDict(extra="forbid")

    request: str = Field(min_length=1, max_length=4000)
    plan: Plan | None = Field(None, description="Execute this plan instead of planning the request.")
    wait: bool = Field(False, description="Answer when the run has finished instead of at once (202).")
    webhook_url: str | None = Field(
        None, max_length=2048, description="POST run events here (its host must be in webhooks.allowed_hosts)."
    )
    # -- the run's own tools (serving/toolsets/run_tools.py) --
    toolsets: list[ToolsetName] | None = Field(
        None,
        max_length=64,
        description="Plan and run over these toolsets (names or ids; `builtin`, `llm`, `ask_user` are every "
        "tenant's) instead of the built-in catalog.",
    )
    tools: list[dict[str, JsonValue]] | None = Field(
        None,
        max_length=128,
        description="Tools the calling app executes itself (OpenAI format): the run pauses in `requires_action` "
        "for each call until POST /v1/runs/{id}/tool_outputs answers it.",
    )


class ToolOutputCreate(BaseModel):
    """POST /v1/runs/{id}/tool_outputs: the answer to one call the run handed to its caller."""

    model_config = ConfigDict(extra="forbid")

    node_id: str = Field(pattern=r"^n[1-9][0-9]?$", description="The node whose call this answers.")
    output: JsonValue = Field(None, description="The tool's output (checked against its output schema).")
    error: str | None = Field(None, max_length=2000, description="Instead of an output: why the call failed.")


def run_summary(record: RunRecord) -> dict[str, Any]:
    """A run as the run list shows it (no plan, no results)."""
    return {
        "run_id": record.run_id,
        "request": record.request,
        "status": record.effective_status,
        "round": record.round,
        "nodes": len(record.plan.nodes),
        "error_type": (record.error or {}).get("type"),
        "escalation": (record.escalation or {}).get("state"),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    }

"""Request bodies and list shapes of the run endpoints."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contract.plan import Plan
from executors.stores import RunRecord

RunListStatus = Literal["running", "succeeded", "failed", "interrupted", "awaiting_approval", "escalated"]
RUN_ID_PATTERN = r"^run_[0-9a-f]{8,40}$"


class RunCreate(BaseModel):
    """POST /v1/runs: a request to plan and execute, or a given plan to execute."""

    model_config = ConfigDict(extra="forbid")

    request: str = Field(min_length=1, max_length=4000)
    plan: Plan | None = Field(None, description="Execute this plan instead of planning the request.")
    wait: bool = Field(False, description="Answer when the run has finished instead of at once (202).")
    webhook_url: str | None = Field(
        None, max_length=2048, description="POST run events here (its host must be in webhooks.allowed_hosts)."
    )


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

"""Settings of the tenant demonstration memory, mounted by the gateway's settings as `learning:`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LearningConfig(BaseModel):
    """How the planner learns from each tenant's own history (retrieval/memory.py, serving/demonstrations.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    from_runs: bool | list[str] = Field(
        default=False,
        description="Add the request and plan of every run that succeeds without a re-plan to its tenant's "
        "memory: true for every tenant, a list for those tenants only, false (the default) for none.",
    )
    plan_ttl_s: float = Field(
        default=7 * 86400.0,
        gt=0,
        description="How long a plan's id accepts feedback (`POST /v1/plans/{id}/feedback`); the plan record "
        "(request, catalog, plan) is kept in the run store's tenant cache this long (at most "
        "runs.retention_max_age_s), so any replica accepts it; it counts toward the tenant's stored bytes.",
    )
    max_demonstrations_per_tenant: int = Field(
        default=5000, ge=1, description="Demonstrations kept per tenant; past it the least recently retrieved go."
    )
    max_bytes_per_tenant: int = Field(
        default=16 * 1024 * 1024,
        ge=1024,
        description="Request + plan bytes kept per tenant; past it the least recently retrieved go. They also "
        "count toward runs.max_stored_bytes_per_tenant.",
    )
    max_request_chars: int = Field(default=2000, ge=1, description="Longest request text of a demonstration.")
    max_plan_bytes: int = Field(
        default=8192,
        ge=64,
        description="Largest plan of a demonstration (compact JSON): an example must fit the planner's prompt.",
    )
    max_import_lines: int = Field(default=2000, ge=1, description="Most demonstrations in one import.")
    usage_flush_s: float = Field(
        default=300.0,
        ge=0,
        description="Retrieval counters (what eviction goes by) are written with the next change, on close, "
        "and at most this often from searches alone (0: after every search).",
    )

    def learns_from_runs(self, tenant: str) -> bool:
        if isinstance(self.from_runs, bool):
            return self.from_runs
        return tenant in self.from_runs

"""Settings of the run store (section `runs`): where runs live, leases, quotas, retention, followers.

`store_url` chooses the backend (`sqlite:///path`, `postgresql://…`); everything else has a default
that suits one embedded gateway. Several gateways on one PostgreSQL keep the same values.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contract.plan import MAX_PLAN_NODES

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


class RunsConfig(BaseModel):
    """Run store, leases, per-tenant quotas, retention and SSE followers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    store_url: str | None = Field(
        default=None,
        description="Run store: `sqlite:///ABSOLUTE/PATH` or `postgresql://user@host:port/db`. "
        "Unset: `sqlite:///$PLANSTACK_HOME/runs.sqlite3` (the embedded default).",
    )
    replica_id: str | None = Field(
        default=None,
        max_length=120,
        description="Name of this process as a lease owner. Unset: host-pid-random, unique per process.",
    )
    # -- leases: one driver per run ----------------------------------------------------------------
    lease_ttl_s: float = Field(
        default=15.0, gt=0, le=3600, description="A driver's lease lasts this long after its last heartbeat."
    )
    heartbeat_s: float = Field(
        default=4.0,
        gt=0,
        le=600,
        description="How often the driver of a run renews its lease (well below lease_ttl_s).",
    )
    takeover: bool = Field(
        default=True, description="Gateways take over runs whose lease expired (their driver died) and finish them."
    )
    takeover_interval_s: float = Field(
        default=5.0, gt=0, le=3600, description="How often a gateway looks for runs with an expired lease."
    )
    max_takeovers: int = Field(
        default=3,
        ge=0,
        le=100,
        description="Takeovers of one run before it is left `interrupted` (a run that kills drivers).",
    )
    follow_poll_s: float = Field(
        default=0.5,
        gt=0,
        le=60,
        description="One query per gateway per tick for all followed runs: new events written by another "
        "process (SQLite) and drivers that died (both backends; PostgreSQL delivers events by NOTIFY at once).",
    )
    pool_size: int = Field(default=10, ge=1, le=200, description="PostgreSQL connections per gateway.")
    connect_timeout_s: float = Field(default=10.0, gt=0, description="How long to wait for the database at start-up.")
    # -- per-tenant quotas ------------------------------------------------------------------------
    max_active_runs_per_tenant: int = Field(
        default=16, ge=1, description="Runs of one tenant executing at once (all gateways); past it 429."
    )
    max_stored_runs_per_tenant: int = Field(
        default=10_000, ge=1, description="Runs of one tenant kept in the store; past it new runs get 429 until purged."
    )
    max_stored_bytes_per_tenant: int = Field(
        default=256 * MIB, ge=KIB, description="Bytes of plans, results and events one tenant may keep; past it 429."
    )
    max_plan_nodes: int = Field(
        default=64, ge=1, le=MAX_PLAN_NODES, description="Nodes in one plan; past it 413 (at most the plan's own cap)."
    )
    max_plan_bytes: int = Field(default=64 * KIB, ge=KIB, description="Serialised size of one plan; past it 413.")
    max_node_output_bytes: int = Field(
        default=1 * MIB,
        ge=KIB,
        description="Serialised size of one node output. A larger output is not stored: the node fails "
        "with `output_too_large` (not retried), its fallback runs if it has one.",
    )
    # -- retention --------------------------------------------------------------------------------
    retention_max_age_s: float = Field(
        default=30 * 86_400.0, gt=0, description="Finished (or abandoned) runs older than this are purged."
    )
    retention_max_total_bytes: int = Field(
        default=2 * GIB, ge=MIB, description="Past this total size the oldest finished runs are purged first."
    )
    purge_interval_s: float = Field(default=3600.0, ge=0, description="How often a gateway purges; 0 never (CLI only).")
    # -- SSE followers ----------------------------------------------------------------------------
    max_followers_per_tenant: int = Field(default=32, ge=1, description="Open /v1/runs/{id}/events streams per tenant.")
    max_followers_total: int = Field(default=512, ge=1, description="Open event streams per gateway, all tenants.")

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> RunsConfig:
        if self.heartbeat_s >= self.lease_ttl_s:
            raise ValueError(
                f"runs.heartbeat_s ({self.heartbeat_s}) must be below runs.lease_ttl_s ({self.lease_ttl_s})"
            )
        return self

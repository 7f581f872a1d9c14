"""Scheduler and run limits. Paths (the run store) are not configured here: the caller passes them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ExecutorConfig(BaseModel):
    """How plans are run: concurrency, timeouts, retries, breakers, caps. Every field has a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_parallel: int = Field(
        default=8, ge=1, le=1024, description="Most tool calls in flight at once, all runs together."
    )
    class_limits: dict[str, int] = Field(
        default_factory=dict,
        description="Most calls in flight per concurrency class (a tool's `concurrency_class`); "
        "classes not listed are bounded by `max_parallel` only. Tools flagged `slow` are always serialised.",
    )
    default_timeout_s: float = Field(default=30.0, gt=0, description="Per-attempt timeout of tools that set none.")
    default_max_attempts: int = Field(
        default=3, ge=1, le=10, description="Attempts for retryable errors of tools that set no `retries`."
    )
    backoff_base_s: float = Field(default=0.2, ge=0, description="Delay before the 2nd attempt; doubles each retry.")
    backoff_max_s: float = Field(default=5.0, ge=0, description="Upper bound of one backoff delay.")
    backoff_jitter: float = Field(
        default=0.1, ge=0, le=1, description="Random extra delay, as a fraction of the delay (0.1 = up to +10%)."
    )
    breaker_threshold: int = Field(
        default=5, ge=1, description="Consecutive failed calls of one tool that open its circuit breaker."
    )
    breaker_cooldown_s: float = Field(
        default=30.0, ge=0, description="How long an open breaker fails calls fast before letting one through."
    )
    max_steps: int = Field(
        default=60, ge=1, description="Most tool executions in one run (all rounds; retries of a node count once)."
    )
    max_run_seconds: float = Field(default=300.0, gt=0, description="Wall-time cap of one run (per process attempt).")
    max_replans: int = Field(default=2, ge=0, le=10, description="Re-plans allowed after nodes fail for good.")
    max_condition_chars: int = Field(
        default=500, ge=1, le=10_000, description="Longest `success_condition` compiled; longer ones are invalid."
    )
    summary_chars: int = Field(default=400, ge=40, description="Longest observation summary handed to the planner.")

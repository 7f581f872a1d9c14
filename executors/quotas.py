"""Size caps on what a run may store: the plan (nodes, bytes) and each node's output (bytes); the
tenant caps the store checks (`tenant_quota`).

A plan over the caps is refused before anything is written (`PlanTooLarge`). A node whose output is
over `runs.max_node_output_bytes` is not stored: its result becomes `failed` with `output_too_large`
(not retryable: the same call would return the same output), so its dependants are skipped and its
fallback, if any, runs.
"""

from __future__ import annotations

from contract.plan import Plan
from executors.errors import ExecutorError
from executors.observation import NodeResult, canonical_json, summarize_result
from executors.stores.config import RunsConfig
from executors.stores.records import TenantQuota


class PlanTooLarge(ExecutorError):
    """A plan over `runs.max_plan_nodes` or `runs.max_plan_bytes`; nothing was written."""

    kind = "plan_too_large"
    status = 413
    type = "invalid_request_error"
    param = "plan"


class OutputTooLarge(ExecutorError):
    kind = "output_too_large"


def tenant_quota(config: RunsConfig, *, outside_bytes: int = 0) -> TenantQuota:
    """The tenant caps of `config`; `outside_bytes`: what the tenant keeps outside the run store (the
    gateway's demonstrations and cached catalogs), counted with its stored bytes."""
    return TenantQuota(
        max_active_runs=config.max_active_runs_per_tenant,
        max_stored_runs=config.max_stored_runs_per_tenant,
        max_stored_bytes=config.max_stored_bytes_per_tenant,
        outside_bytes=outside_bytes,
    )


def check_plan_size(plan: Plan, config: RunsConfig) -> None:
    if len(plan.nodes) > config.max_plan_nodes:
        raise PlanTooLarge(f"the plan has {len(plan.nodes)} nodes; the limit is {config.max_plan_nodes}")
    size = len(plan.model_dump_json().encode("utf-8"))
    if size > config.max_plan_bytes:
        raise PlanTooLarge(f"the plan is {size} bytes; the limit is {config.max_plan_bytes}")


def cap_output(result: NodeResult, config: RunsConfig, *, summary_chars: int) -> NodeResult:
    """`result` itself, or a failed result without the output when the output is over the cap."""
    if result.output is None:
        return result
    size = len(canonical_json(result.output).encode("utf-8"))
    if size <= config.max_node_output_bytes:
        return result
    error = OutputTooLarge(
        f"the output of {result.tool} is {size} bytes; the limit is {config.max_node_output_bytes}",
        hint="ask the tool for less (filters, a smaller page) or raise runs.max_node_output_bytes",
    )
    capped = result.model_copy(
        update={"status": "failed", "output": None, "condition_passed": None, "error": error.structured()}
    )
    capped.summary = summarize_result(capped, max_chars=summary_chars)
    return capped

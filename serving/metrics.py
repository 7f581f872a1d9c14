"""Prometheus metrics of the gateway, on a registry owned by one app instance (no global state).

Per-tool series are labelled by `source` (`builtin`, `model`, a toolset's name) and `tool`. Toolsets
are the tenants' own, so their labels are bounded (`BoundedLabels`): the first `tools.metrics_max_sources`
sources and, per source, the first `tools.metrics_max_tools_per_source` tools keep their names; later
ones are counted as `other`.

Series name a tenant only when `tenant_labels` is on, which the gateway does only when /metrics is
protected by `gateway.metrics_token`: an open /metrics would list every tenant's ids and activity to
anyone who can reach it. Without the labels those series count all tenants together, and the names a
tenant chose (a toolset's name, its tools', the calling app's tools) are not shown either: such calls
are counted under `source="toolset"` or `"client"` with `tool="other"`; the product's own sources
(`builtin`, `model`, `ask_user`) keep their tool names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

if TYPE_CHECKING:
    from executors.registry import ToolSpec

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)
LOOP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2.5)
TOOL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
OTHER = "other"
PRODUCT_SOURCES = frozenset(("builtin", "model", "ask_user"))  # tool names the product, not a tenant, chose
BREAKER_STATES = {"closed": 0.0, "open": 1.0, "half_open": 0.5}


class BoundedLabels:
    """(source, tool) label pairs with a bounded number of distinct values (see module doc)."""

    def __init__(self, max_sources: int = 50, max_tools_per_source: int = 20) -> None:
        self.max_sources = max_sources
        self.max_tools = max_tools_per_source
        self._tools: dict[str, set[str]] = {}

    def __call__(self, source: str, tool: str) -> tuple[str, str]:
        known = self._tools.get(source)
        if known is None:
            if len(self._tools) >= self.max_sources:
                return OTHER, OTHER
            known = self._tools[source] = set()
        if tool not in known:
            if len(known) >= self.max_tools:
                return source, OTHER
            known.add(tool)
        return source, tool


class GatewayMetrics:
    def __init__(self, *, tenant_labels: bool = False) -> None:
        self.tenant_labels = tenant_labels
        per_tenant = ["tenant"] if tenant_labels else []
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "planstack_requests_total", "HTTP requests answered", ["route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "planstack_request_seconds",
            "Request latency (to the last byte for streams)",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "planstack_errors_total", "Error responses by OpenAI error type", ["type"], registry=self.registry
        )
        self.loop_busy = Histogram(
            "planstack_event_loop_busy_seconds",
            "CPU time the event loop's thread ran between two ticks of its monitor: how long the gateway's own "
            "code kept other requests waiting (serving/loop_monitor.py)",
            buckets=LOOP_BUCKETS,
            registry=self.registry,
        )
        self.loop_lag = Histogram(
            "planstack_event_loop_lag_seconds",
            "How late the monitor's tick ran (wall clock: the loop's own work and the host's load together)",
            buckets=LOOP_BUCKETS,
            registry=self.registry,
        )
        self.upstream_failures = Counter(
            "planstack_upstream_failures_total",
            "Engine calls that failed (unavailable, timeout, 5xx)",
            ["reason"],
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "planstack_upstream_in_flight", "Requests being relayed to the engine", registry=self.registry
        )
        self.upstream_rejected = Counter(
            "planstack_upstream_rejected_total",
            "Engine requests refused with 429: every slot busy (global) or the tenant's share used (tenant)",
            ["reason"],
            registry=self.registry,
        )
        self.schema_checks = Counter(
            "planstack_schema_checks_total",
            "Client response_format schema pre-checks",
            ["outcome"],
            registry=self.registry,
        )
        self.plans = Counter(
            "planstack_plans_total", "Plans produced, by the path that produced them", ["path"], registry=self.registry
        )
        self.plan_cache = Counter(
            "planstack_plan_cache_total", "Plan cache lookups", ["outcome"], registry=self.registry
        )
        self.door_checks = Counter(
            "planstack_door_checks_total",
            "Request checks at the door: inline (on the event loop), pool (in a worker), busy (429), timeout (503), "
            "crashed; catalog_hit / catalog_miss (client tool catalogs)",
            ["outcome"],
            registry=self.registry,
        )

        self.approvals = Counter(
            "planstack_approval_decisions_total",
            "Decisions on runs awaiting approval (expired: nobody decided in time)",
            [*per_tenant, "verdict"],
            registry=self.registry,
        )
        self.approval_wait = Histogram(
            "planstack_approval_wait_seconds",
            "Time from an approval request to its decision",
            buckets=(1, 10, 60, 300, 900, 3600, 14_400, 86_400),
            registry=self.registry,
        )
        self.escalations = Counter(
            "planstack_escalations_total", "Runs escalated to a person", [*per_tenant, "reason"], registry=self.registry
        )
        self.escalation_actions = Counter(
            "planstack_escalation_actions_total",
            "Escalations handled",
            [*per_tenant, "action"],
            registry=self.registry,
        )
        self.webhooks = Counter(
            "planstack_webhook_deliveries_total",
            "Webhook delivery attempts' outcomes (delivered, retried, failed, dropped)",
            ["outcome"],
            registry=self.registry,
        )

        self.tool_labels = BoundedLabels()
        self.tool_calls = Counter(
            "planstack_tool_calls_total",
            "Tool call attempts by source, tool and outcome (ok, or the error's type: timeout, unavailable, ...)",
            ["source", "tool", "outcome"],
            registry=self.registry,
        )
        self.tool_seconds = Histogram(
            "planstack_tool_call_seconds",
            "Duration of one tool call attempt",
            ["source", "tool"],
            buckets=TOOL_BUCKETS,
            registry=self.registry,
        )
        self.tool_retries = Counter(
            "planstack_tool_retries_total", "Tool calls sent again after a retryable failure", ["source", "tool"],
            registry=self.registry,
        )  # fmt: skip
        self.tool_breaker = Gauge(
            "planstack_tool_breaker_state",
            "Circuit breaker of a tool: 0 closed, 0.5 half-open (one trial call), 1 open (calls fail fast)",
            ["source", "tool"],
            registry=self.registry,
        )
        self.runs_finished = Counter(
            "planstack_runs_finished_total", "Runs that ended, by status", ["status"], registry=self.registry
        )
        self.replans = Counter(
            "planstack_replans_total", "Re-plans after nodes failed for good", registry=self.registry
        )
        self.runs_waiting_gauge = Gauge(
            "planstack_runs_waiting",
            "Runs (all tenants) paused for a person's approval (awaiting_approval) or their caller's tool outputs "
            "(requires_action), read from the run store",
            ["reason"],
            registry=self.registry,
        )

    def bound_tool_labels(self, max_sources: int, max_tools_per_source: int) -> None:
        self.tool_labels = BoundedLabels(max_sources, max_tools_per_source)

    # -- the executors' ToolCallObserver ------------------------------------------------------------

    def _tool(self, spec: ToolSpec) -> tuple[str, str]:
        """The (source, tool) labels of `spec`: a tenant's own names only behind the metrics token."""
        if not self.tenant_labels and spec.source not in PRODUCT_SOURCES:
            return ("client" if spec.source == "client" else "toolset"), OTHER
        return self.tool_labels(spec.source, spec.name)

    def call_finished(self, spec: ToolSpec, outcome: str, seconds: float) -> None:
        source, tool = self._tool(spec)
        self.tool_calls.labels(source, tool, outcome).inc()
        self.tool_seconds.labels(source, tool).observe(seconds)

    def call_retried(self, spec: ToolSpec) -> None:
        self.tool_retries.labels(*self._tool(spec)).inc()

    def breaker_changed(self, spec: ToolSpec, state: str) -> None:
        self.tool_breaker.labels(*self._tool(spec)).set(BREAKER_STATES.get(state, 1.0))

    # -- the executors' SteeringObserver --------------------------------------------------------------

    def run_finished(self, status: str) -> None:
        self.runs_finished.labels(status).inc()

    def replanned(self) -> None:
        self.replans.inc()

    def runs_waiting(self, counts: dict[str, int]) -> None:
        for reason, count in counts.items():
            self.runs_waiting_gauge.labels(reason).set(count)

    def _tenant(self, tenant: str) -> tuple[str, ...]:
        return (tenant,) if self.tenant_labels else ()

    def approval_decided(self, tenant: str, verdict: str, waited_s: float) -> None:
        self.approvals.labels(*self._tenant(tenant), verdict).inc()
        self.approval_wait.observe(waited_s)

    def escalated(self, tenant: str, reason: str) -> None:
        self.escalations.labels(*self._tenant(tenant), reason).inc()

    def escalation_handled(self, tenant: str, action: str) -> None:
        self.escalation_actions.labels(*self._tenant(tenant), action).inc()

    def webhook_delivery(self, outcome: str) -> None:
        self.webhooks.labels(outcome).inc()

    def loop_stretch(self, busy_s: float, lag_s: float) -> None:
        self.loop_busy.observe(busy_s)
        self.loop_lag.observe(lag_s)

    def render(self) -> bytes:
        return generate_latest(self.registry)

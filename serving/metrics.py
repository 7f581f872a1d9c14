"""Prometheus metrics of the gateway, on a registry owned by one app instance (no global state).

Series name a tenant only when `tenant_labels` is on, which the gateway does only when /metrics is
protected by `gateway.metrics_token`: an open /metrics would list every tenant's ids and activity to
anyone who can reach it. Without the labels those series count all tenants together."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)


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

    def render(self) -> bytes:
        return generate_latest(self.registry)

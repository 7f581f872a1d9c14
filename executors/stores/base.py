"""What a run store is: small protocols, one per concern, and `RunStore`, all of them together.

A store holds runs (a tenant, a request, the current plan, status), the plan of every round, node
results, an ordered event log per run, the lease of each run, webhook deliveries, and a small
tenant-scoped key-value cache with TTL. Every call is tenant-scoped: a run of tenant A does not
exist for tenant B (`get_run` returns None, other calls raise `RunNotFound`). Code that needs one
concern asks for its protocol (the lease keeper a `RunLeases`, webhooks a `WebhookDeliveries`, the
gateway's plan records a `TenantCache`); backends implement `RunStore` (the one SQL store over a
dialect, `executors.stores.sql`) and register a URL scheme (`register_backend`).

Leases make one driver per run. `create_run` and `acquire_lease` give the caller a `Lease`
(owner, epoch, expiry); every write of a run (`update_run`, `save_result`, `append_event`) takes
that lease and is fenced on it, in the same transaction: once another replica has acquired the run
(epoch + 1) the stale driver's writes raise `LeaseLost` and change nothing. A lease that is not
renewed (`renew_lease`) within its TTL expires; the run then reads `interrupted` and may be
acquired by anyone. Expiry is judged by the store's clock (the database server's, for PostgreSQL),
so replicas with skewed clocks agree.

Node results are idempotent on (run id, round, node id): the first committed result wins and a
second save returns it unchanged; dependants are always built from what `save_result` returned.

A failing database raises `RunStoreError` (retryable), never a driver's own exception, and a
failed call leaves nothing half-written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from contract.plan import Plan
from executors.observation import NodeResult
from executors.stores.config import RunsConfig
from executors.stores.feed import EventFeed, Subscription
from executors.stores.records import (
    EscalationState,
    EventType,
    Lease,
    PurgeReport,
    ReopenFrom,
    RunEvent,
    RunRecord,
    RunStatus,
    RunUpdate,
    TenantQuota,
    TenantUsage,
    WebhookDelivery,
)
from executors.stores.tool_records import ToolAnswer, ToolsetRecord

MAX_CACHE_KEY_CHARS = 512
MAX_CACHE_VALUE_CHARS = 4 * 1024 * 1024


class RunRecords(Protocol):
    """Runs, their plan history and their node results."""

    async def create_run(
        self, record: RunRecord, *, owner: str, ttl_s: float, quota: TenantQuota | None = None
    ) -> Lease:
        """Record a new run, leased to `owner`. With `quota`, the tenant's caps are checked in the same
        transaction (`QuotaExceeded` subclasses; nothing written)."""
        ...

    async def get_run(self, tenant: str, run_id: str) -> RunRecord | None: ...

    async def list_runs(
        self,
        tenant: str,
        *,
        limit: int = 50,
        status: RunStatus | None = None,
        escalation: EscalationState | None = None,
        before: str | None = None,
    ) -> list[RunRecord]:
        """The tenant's runs, newest first; `status` (`interrupted`: running without a live driver)
        and `escalation` filter them, `before` (a run id) pages on from that run."""
        ...

    async def update_run(self, lease: Lease, update: RunUpdate) -> RunRecord:
        """Fenced update of the fields `update` gives; returns the run as it is now."""
        ...

    async def plans(self, tenant: str, run_id: str) -> list[tuple[int, Plan]]: ...

    async def save_result(self, lease: Lease, result: NodeResult) -> NodeResult:
        """Fenced, idempotent commit; returns the committed result (the first one wins)."""
        ...

    async def results(self, tenant: str, run_id: str, *, round_: int | None = None) -> list[NodeResult]: ...


class RunEvents(Protocol):
    """The ordered event log of each run, and wake-ups for its followers."""

    async def append_event(
        self,
        lease: Lease,
        type_: EventType,
        *,
        round_: int = 0,
        node_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> RunEvent:
        """Fenced append with the next sequence number; followers of the run are woken."""
        ...

    async def events(self, tenant: str, run_id: str, *, after: int = 0, limit: int = 1000) -> list[RunEvent]: ...

    def subscribe(self, run_id: str) -> Subscription:
        """Wake-ups for one run's followers (see `executors.stores.feed`)."""
        ...


class RunLeases(Protocol):
    """One driver per run."""

    async def acquire_lease(
        self,
        tenant: str,
        run_id: str,
        *,
        owner: str,
        ttl_s: float,
        takeover: bool = False,
        quota: TenantQuota | None = None,
    ) -> Lease | None:
        """Take the run's lease when it is free or expired; None when the run already finished;
        `RunBusy` while another live lease is held. `takeover` counts the acquisition against
        `runs.max_takeovers`. With `quota`, the run executing again must fit the tenant's active-runs
        cap, checked in the same transaction (`TooManyActiveRuns`, nothing changed)."""
        ...

    async def renew_lease(self, lease: Lease, ttl_s: float) -> Lease:
        """The heartbeat: extend the lease, or `LeaseLost` if someone else acquired the run."""
        ...

    async def release_lease(self, lease: Lease) -> None:
        """Give the run up now (clean stop): another replica may acquire it at once."""
        ...

    async def orphaned_runs(self, *, max_takeovers: int, limit: int = 20) -> list[tuple[str, str]]:
        """(tenant, run id) of running runs whose lease expired, fewest takeovers first."""
        ...


class RunSteering(Protocol):
    """What people in the loop change: paused and escalated runs."""

    async def reopen(
        self,
        tenant: str,
        run_id: str,
        *,
        owner: str,
        ttl_s: float,
        expect: ReopenFrom,
        update: RunUpdate,
        quota: TenantQuota | None = None,
    ) -> Lease | None:
        """Atomically move a run paused for approval (`expect="awaiting_approval"`), or failed with an
        open escalation (`"escalated"`), back to `running` under a new lease for `owner`, with the
        fields `update` gives (its status is `running` whatever it says, and the error is cleared).
        None when the run is not in that state (someone else decided first); `RunNotFound` for an
        unknown run. With `quota`, the run executing again must fit the tenant's active-runs cap,
        checked in the same transaction (`TooManyActiveRuns`, nothing changed). The one way out of a
        pause: nothing else (takeover, resume) drives a paused run."""
        ...

    async def close_escalation(self, tenant: str, run_id: str, escalation: dict[str, Any]) -> bool:
        """Replace an open escalation of a failed run by `escalation` (its `state` is no longer open);
        False when it is not open (any more)."""
        ...

    async def awaiting_runs(self, *, limit: int = 100) -> list[RunRecord]:
        """Runs of every tenant paused for approval, oldest first (the expiry sweep)."""
        ...


class WebhookDeliveries(Protocol):
    """The state of each run event's delivery to the run's webhook."""

    async def save_delivery(self, tenant: str, run_id: str, delivery: WebhookDelivery) -> None:
        """Record (or update) the delivery of event `delivery.seq` to the run's webhook; not fenced:
        deliveries go on after the run's driver has stopped."""
        ...

    async def deliveries(self, tenant: str, run_id: str) -> list[WebhookDelivery]: ...


class TenantCache(Protocol):
    """A small key-value cache with TTL, scoped by namespace and tenant, shared by replicas."""

    async def cache_get(self, namespace: str, tenant: str, key: str) -> str | None: ...

    async def cache_put(
        self, namespace: str, tenant: str, key: str, value: str, ttl_s: float, *, quota: TenantQuota | None = None
    ) -> None:
        """Store `value` for `ttl_s` (at most `runs.retention_max_age_s`). The entry counts toward its
        tenant's stored bytes and the retention total; with `quota`, a tenant that keeps its
        `max_stored_bytes` already is refused in the same transaction (`StoredBytesQuota`, nothing written)."""
        ...


class RunRetention(Protocol):
    """What a tenant keeps, and the purge of what nobody needs any more."""

    async def usage(self, tenant: str) -> TenantUsage: ...

    async def purge(self, *, max_age_s: float, max_total_bytes: int) -> PurgeReport:
        """Delete runs that are finished or abandoned (no live lease) and older than `max_age_s`, then
        the oldest such runs while the store holds more than `max_total_bytes`; expired cache entries."""
        ...


class TenantToolsets(Protocol):
    """Each tenant's toolsets (its own MCP servers and OpenAPI services), shared by every replica."""

    async def create_toolset(self, record: ToolsetRecord, *, max_per_tenant: int) -> ToolsetRecord:
        """Record a new toolset (its times from the store's clock). `ToolsetExists` when the tenant has one
        of that name, `TooManyToolsets` at the cap; nothing written then."""
        ...

    async def get_toolset(self, tenant: str, key: str) -> ToolsetRecord | None:
        """The tenant's toolset with this id or name; None for an unknown one or another tenant's."""
        ...

    async def list_toolsets(self, tenant: str) -> list[ToolsetRecord]: ...

    async def update_toolset_tools(
        self, tenant: str, toolset_id: str, tools: list[dict[str, Any]], version: str
    ) -> ToolsetRecord | None:
        """A new snapshot of the toolset's tools (`revision` + 1 when `version` changed); None when the
        toolset is gone."""
        ...

    async def delete_toolset(self, tenant: str, key: str) -> ToolsetRecord | None:
        """Delete it; the deleted record, or None when there was none. Runs keep their own copies of the
        definitions they used."""
        ...


class RunToolCalls(Protocol):
    """Runs paused until the calling app (or a person) answers tool calls, and those answers."""

    async def pause_for_action(
        self, lease: Lease, action: dict[str, Any], *, round_: int, awaited: Sequence[str]
    ) -> RunRecord | None:
        """Fenced: the run waits (`requires_action`, with `action`) unless a call of `awaited` (node ids of
        `round_`) was answered meanwhile: then None, and the driver runs the round again."""
        ...

    async def answer_tool_call(
        self, tenant: str, run_id: str, answer: ToolAnswer, *, owner: str, ttl_s: float
    ) -> Lease | None:
        """Record the first answer of a call (`AlreadyAnswered` for any later one) and, when the run is
        paused for its calls, move it back to `running` under a lease for `owner` (returned). None when
        the run is not paused: its driver sees the answer before it could pause."""
        ...

    async def tool_answers(self, tenant: str, run_id: str, round_: int) -> list[ToolAnswer]: ...

    async def runs_requiring_action(self, *, limit: int = 100) -> list[RunRecord]:
        """Runs of every tenant paused for their tool calls, oldest first (the expiry sweep)."""
        ...

    async def paused_counts(self) -> dict[str, int]:
        """How many runs wait for a person (`awaiting_approval`) or for tool outputs (`requires_action`)."""
        ...


class RunStore(
    RunRecords,
    RunEvents,
    RunLeases,
    RunSteering,
    WebhookDeliveries,
    TenantCache,
    RunRetention,
    TenantToolsets,
    RunToolCalls,
    Protocol,
):
    """Every concern of a run store, with its settings and its followers' feed. Use from one event
    loop at a time."""

    config: RunsConfig
    feed: EventFeed

    @property
    def display_url(self) -> str:
        """Where the store is, without credentials (for logs and the CLI)."""
        ...

    async def aclose(self) -> None: ...


def check_cache_entry(namespace: str, tenant: str, key: str, value: str | None = None, ttl_s: float = 1.0) -> None:
    """Bounds of the cache API, the same for every backend."""
    if not namespace or not tenant:
        raise ValueError("cache namespace and tenant must not be empty")
    if max(len(namespace), len(tenant), len(key)) > MAX_CACHE_KEY_CHARS:
        raise ValueError(f"cache namespace, tenant and key are limited to {MAX_CACHE_KEY_CHARS} characters")
    if value is not None and len(value) > MAX_CACHE_VALUE_CHARS:
        raise ValueError(f"cache values are limited to {MAX_CACHE_VALUE_CHARS} characters")
    if not ttl_s > 0:
        raise ValueError("cache ttl_s must be positive")


BackendFactory = Callable[[str, RunsConfig], RunStore]
BACKENDS: dict[str, BackendFactory] = {}


def register_backend(schemes: tuple[str, ...], factory: BackendFactory) -> None:
    """Make `open_run_store` build URLs of these schemes with `factory(url, config)`."""
    for scheme in schemes:
        BACKENDS[scheme] = factory


def url_scheme(url: str) -> str:
    return urlsplit(url).scheme.lower()


def redact_url(url: str) -> str:
    """The URL without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

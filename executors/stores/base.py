"""`RunStore`: the async interface every run store implements, and the registry of backends.

A store holds runs (a tenant, a request, the current plan, status), the plan of every round, node
results, an ordered event log per run, the lease of each run, and a small tenant-scoped key-value
cache with TTL. Every call is tenant-scoped: a run of tenant A does not exist for tenant B
(`get_run` returns None, other calls raise `RunNotFound`).

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

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit, urlunsplit

from contract.plan import Plan
from executors.observation import NodeResult
from executors.stores.config import RunsConfig
from executors.stores.feed import EventFeed, Listener, Subscription
from executors.stores.records import (
    EscalationState,
    EventType,
    Lease,
    PurgeReport,
    ReopenFrom,
    RunEvent,
    RunRecord,
    RunStatus,
    TenantQuota,
    TenantUsage,
    WatchState,
    WebhookDelivery,
)

MAX_CACHE_KEY_CHARS = 512
MAX_CACHE_VALUE_CHARS = 4 * 1024 * 1024


class RunStore(ABC):
    """Durable runs, results, events, leases and a tenant-scoped cache. Use from one event loop at a time."""

    schemes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: RunsConfig) -> None:
        self.config = config
        self.feed = EventFeed(self._watch_state, config.follow_poll_s, self._listener())

    @classmethod
    @abstractmethod
    def from_url(cls, url: str, config: RunsConfig) -> RunStore:
        """Build the store for `url` (nothing blocks on the network until the first call)."""

    @property
    @abstractmethod
    def display_url(self) -> str:
        """Where the store is, without credentials (for logs and the CLI)."""

    # -- runs ------------------------------------------------------------------------------------

    @abstractmethod
    async def create_run(
        self, record: RunRecord, *, owner: str, ttl_s: float, quota: TenantQuota | None = None
    ) -> Lease:
        """Record a new run, leased to `owner`. With `quota`, the tenant's caps are checked in the same
        transaction (`QuotaExceeded` subclasses; nothing written)."""

    @abstractmethod
    async def get_run(self, tenant: str, run_id: str) -> RunRecord | None: ...

    @abstractmethod
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

    @abstractmethod
    async def update_run(
        self,
        lease: Lease,
        *,
        status: RunStatus | None = None,
        plan: Plan | None = None,
        round_: int | None = None,
        replans: int | None = None,
        error: dict[str, Any] | None = None,
        approval: dict[str, Any] | None = None,
        escalation: dict[str, Any] | None = None,
    ) -> RunRecord:
        """Fenced update of the fields given; a new `plan` with `round_` is also kept in the plan history."""

    @abstractmethod
    async def reopen(
        self,
        tenant: str,
        run_id: str,
        *,
        owner: str,
        ttl_s: float,
        expect: ReopenFrom,
        approval: dict[str, Any] | None = None,
        escalation: dict[str, Any] | None = None,
        plan: Plan | None = None,
        round_: int | None = None,
        replans: int | None = None,
        budget_round: int | None = None,
    ) -> Lease | None:
        """Atomically move a run paused for approval (`expect="awaiting_approval"`), or failed with an
        open escalation (`"escalated"`), back to `running` under a new lease for `owner`, with the
        fields given (the error is cleared). None when the run is not in that state (someone else
        decided first); `RunNotFound` for an unknown run. The one way out of a pause: nothing else
        (takeover, resume) drives a paused run."""

    @abstractmethod
    async def close_escalation(self, tenant: str, run_id: str, escalation: dict[str, Any]) -> bool:
        """Replace an open escalation of a failed run by `escalation` (its `state` is no longer open);
        False when it is not open (any more)."""

    @abstractmethod
    async def awaiting_runs(self, *, limit: int = 100) -> list[RunRecord]:
        """Runs of every tenant paused for approval, oldest first (the expiry sweep)."""

    @abstractmethod
    async def plans(self, tenant: str, run_id: str) -> list[tuple[int, Plan]]: ...

    # -- node results ----------------------------------------------------------------------------

    @abstractmethod
    async def save_result(self, lease: Lease, result: NodeResult) -> NodeResult:
        """Fenced, idempotent commit; returns the committed result (the first one wins)."""

    @abstractmethod
    async def results(self, tenant: str, run_id: str, *, round_: int | None = None) -> list[NodeResult]: ...

    # -- events ----------------------------------------------------------------------------------

    @abstractmethod
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

    @abstractmethod
    async def events(self, tenant: str, run_id: str, *, after: int = 0, limit: int = 1000) -> list[RunEvent]: ...

    def subscribe(self, run_id: str) -> Subscription:
        """Wake-ups for one run's followers (see `executors.stores.feed`)."""
        return self.feed.subscribe(run_id)

    # -- webhook deliveries ----------------------------------------------------------------------

    @abstractmethod
    async def save_delivery(self, tenant: str, run_id: str, delivery: WebhookDelivery) -> None:
        """Record (or update) the delivery of event `delivery.seq` to the run's webhook; not fenced:
        deliveries go on after the run's driver has stopped."""

    @abstractmethod
    async def deliveries(self, tenant: str, run_id: str) -> list[WebhookDelivery]: ...

    # -- leases ----------------------------------------------------------------------------------

    @abstractmethod
    async def acquire_lease(
        self, tenant: str, run_id: str, *, owner: str, ttl_s: float, takeover: bool = False
    ) -> Lease | None:
        """Take the run's lease when it is free or expired; None when the run already finished;
        `RunBusy` while another live lease is held. `takeover` counts the acquisition against
        `runs.max_takeovers`."""

    @abstractmethod
    async def renew_lease(self, lease: Lease, ttl_s: float) -> Lease:
        """The heartbeat: extend the lease, or `LeaseLost` if someone else acquired the run."""

    @abstractmethod
    async def release_lease(self, lease: Lease) -> None:
        """Give the run up now (clean stop): another replica may acquire it at once."""

    @abstractmethod
    async def orphaned_runs(self, *, max_takeovers: int, limit: int = 20) -> list[tuple[str, str]]:
        """(tenant, run id) of running runs whose lease expired, fewest takeovers first."""

    # -- quotas and retention --------------------------------------------------------------------

    @abstractmethod
    async def usage(self, tenant: str) -> TenantUsage: ...

    @abstractmethod
    async def purge(self, *, max_age_s: float, max_total_bytes: int) -> PurgeReport:
        """Delete runs that are finished or abandoned (no live lease) and older than `max_age_s`, then
        the oldest such runs while the store holds more than `max_total_bytes`; expired cache entries."""

    # -- tenant-scoped cache ---------------------------------------------------------------------

    @abstractmethod
    async def cache_get(self, namespace: str, tenant: str, key: str) -> str | None: ...

    @abstractmethod
    async def cache_put(self, namespace: str, tenant: str, key: str, value: str, ttl_s: float) -> None: ...

    # -- plumbing --------------------------------------------------------------------------------

    def _listener(self) -> Listener | None:
        """A push source of other replicas' events, when the backend has one."""
        return None

    @abstractmethod
    async def _watch_state(self, run_ids: list[str]) -> dict[str, WatchState]:
        """One read of the state of all followed runs (see `EventFeed`)."""

    @abstractmethod
    async def _close(self) -> None: ...

    async def aclose(self) -> None:
        await self.feed.aclose()
        await self._close()


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


StoreT = TypeVar("StoreT", bound=type[RunStore])
BACKENDS: dict[str, type[RunStore]] = {}


def backend(cls: StoreT) -> StoreT:
    """Class decorator: register a store for each URL scheme in its `schemes`."""
    for scheme in cls.schemes:
        BACKENDS[scheme] = cls
    return cls


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


BackendFactory = Callable[[str, RunsConfig], RunStore]

"""Webhooks: a run's events POSTed to a URL of the client's, signed, retried, never blocking the run.

A run may carry a `webhook_url`. It must be `http(s)://HOST[:PORT]/…` with HOST exactly one of
`webhooks.allowed_hosts` and PORT (the scheme's default when absent) one of `webhooks.allowed_ports`
(no credentials in it, nothing else: an empty host list refuses every webhook). At every attempt the
host is resolved again and every address it resolves to must be public (not loopback, private,
link-local, multicast or reserved) unless `webhooks.allow_private_addresses` is on; the connection
then goes to the address that was checked (DNS pinned: the `Host` header and TLS name stay the
host's), so a host that re-resolves between the check and the connection cannot point the gateway at
an internal service.
When the run appends one of `webhooks.events` (default `awaiting_approval`, `escalated`,
`run_finished`), the driver hands it to the `WebhookNotifier`, which delivers it in a background
task: the run goes on at once.

Each delivery is one JSON body (`{"id", "type", "run_id", "tenant", "seq", "round", "node_id",
"ts", "data"}`, at most `webhooks.max_payload_bytes`: larger event data is replaced by
`{"truncated": true}`) with the headers

    X-Planstack-Event: run_finished
    X-Planstack-Delivery: run_0123…:17          (run id : event seq — the same on every retry)
    X-Planstack-Timestamp: 1767225600
    X-Planstack-Signature: sha256=HEX          HMAC-SHA256(the tenant's webhook key, "<timestamp>." + body)

The webhook key is the tenant's own (`signing_key(tenant)`, derived by the gateway for signing
webhooks only): a tenant that verifies its webhooks learns nothing that signs another tenant's or
predicts anything else derived from the server secret.

A 2xx answer delivers it. Anything else (a 3xx too: redirects are never followed), a timeout
(`webhooks.timeout_s`) or a connection error is retried with exponential backoff up to
`webhooks.max_attempts`; the receiver's body is never read. Every attempt's outcome is stored
(`RunStore.save_delivery`) and shown with the run: the HTTP status, or one phrase for every way of
not getting one (refused, reset, timed out alike), so a tenant cannot map which ports answer. At
most `webhooks.max_in_flight` deliveries are pending per gateway and `max_in_flight_per_tenant` per
tenant. Delivery is at least once and unordered across events (each has its own task and retries):
receivers dedupe on the delivery id and order a run's events by `seq`. Deliveries still in flight
when the gateway stops are not resumed (their state stays `pending`).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import logging
import random
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field

from contract.errors import PlanstackBaseError
from executors.stores import RunEvent, WebhookDeliveries, WebhookDelivery

logger = logging.getLogger("planstack.executors.webhooks")

SIGNATURE_HEADER = "X-Planstack-Signature"
TIMESTAMP_HEADER = "X-Planstack-Timestamp"
DELIVERY_HEADER = "X-Planstack-Delivery"
EVENT_HEADER = "X-Planstack-Event"
UNREACHABLE = "the receiver could not be reached (no HTTP answer)"
DEFAULT_PORTS = {"http": 80, "https": 443}
Resolver = Callable[[str, int], Awaitable[list[str]]]


class WebhooksConfig(BaseModel):
    """Settings section `webhooks`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allowed_hosts: list[str] = Field(
        default_factory=list, description="Host names a webhook_url may point to (exact match); empty: none."
    )
    allowed_ports: list[int] = Field(
        default_factory=lambda: [80, 443],
        description="Ports a webhook_url may use (a URL without one uses its scheme's default, 80 or 443).",
    )
    allow_private_addresses: bool = Field(
        default=False,
        description="Deliver to hosts that resolve to loopback, private, link-local or reserved addresses "
        "(checked at every attempt, the connection pinned to the checked address); off: public addresses only.",
    )
    events: list[str] = Field(
        default_factory=lambda: ["awaiting_approval", "escalated", "run_finished"],
        description="Run event types that are delivered.",
    )
    timeout_s: float = Field(default=5.0, gt=0, le=60, description="Per attempt: connect + answer.")
    max_attempts: int = Field(default=5, ge=1, le=20, description="Attempts per event before it is given up.")
    backoff_base_s: float = Field(default=1.0, ge=0, le=60, description="Delay before the 2nd attempt; doubles.")
    backoff_max_s: float = Field(default=60.0, ge=0, le=3600, description="Upper bound of one backoff delay.")
    max_payload_bytes: int = Field(default=16_384, ge=512, le=1_048_576, description="Largest body sent.")
    max_in_flight: int = Field(default=1000, ge=1, description="Deliveries pending per gateway; past it, dropped.")
    max_in_flight_per_tenant: int = Field(
        default=100, ge=1, description="Of those, the most one tenant's runs may hold; past it, its are dropped."
    )
    max_url_chars: int = Field(default=2048, ge=16, le=8192, description="Longest webhook_url accepted.")


class WebhookRefused(PlanstackBaseError):
    """A webhook_url that is not allowed (scheme, host, credentials, length): the client's (400)."""

    status = 400
    type = "invalid_request_error"
    param = "webhook_url"


def check_webhook_url(url: str, config: WebhooksConfig) -> str:
    """`url` when it may receive webhooks, else `WebhookRefused` saying why."""
    if len(url) > config.max_url_chars:
        raise WebhookRefused(f"webhook_url is longer than {config.max_url_chars} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise WebhookRefused(f"webhook_url is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise WebhookRefused("webhook_url must be an http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise WebhookRefused("webhook_url must not carry credentials")
    host = (parts.hostname or "").lower()
    if not host or host not in {allowed.lower() for allowed in config.allowed_hosts}:
        raise WebhookRefused("webhook_url's host is not in webhooks.allowed_hosts")
    if port == 0 or parts.fragment:
        raise WebhookRefused("webhook_url must not have port 0 or a fragment")
    if (port or DEFAULT_PORTS[parts.scheme]) not in config.allowed_ports:
        raise WebhookRefused("webhook_url's port is not in webhooks.allowed_ports")
    if _is_literal(host) and not address_allowed(host, config):
        raise WebhookRefused("webhook_url points to a loopback, private or reserved address")
    return url


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def address_allowed(address: str, config: WebhooksConfig) -> bool:
    """A resolved address a webhook may be delivered to: a public one, or any with
    `allow_private_addresses` (IPv4-mapped IPv6 addresses are judged as the IPv4 address they map)."""
    if config.allow_private_addresses:
        return True
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_loopback or ip.is_link_local)


async def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (the event loop's resolver, off the loop)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def pinned(url: str, address: str) -> tuple[str, str]:
    """(the URL with its host replaced by `address`, the `Host` header of the original URL)."""
    parts = urlsplit(url)
    literal = f"[{address}]" if ":" in address else address
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc)), parts.netloc


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The signature header's value: `sha256=` + HMAC-SHA256(secret, timestamp + "." + body)."""
    return "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def payload(tenant: str, event: RunEvent, max_bytes: int) -> bytes:
    body: dict[str, Any] = {
        "id": f"{event.run_id}:{event.seq}",
        "type": event.type,
        "run_id": event.run_id,
        "tenant": tenant,
        "seq": event.seq,
        "round": event.round,
        "node_id": event.node_id,
        "ts": event.ts,
        "data": event.data,
    }
    encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    if len(encoded) > max_bytes:
        body["data"] = {"truncated": True}
        encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return encoded


class WebhookNotifier:
    """Delivers run events in background tasks (one per event), bounded in number, per tenant too."""

    def __init__(
        self,
        store: WebhookDeliveries,
        config: WebhooksConfig,
        signing_key: Callable[[str], bytes],
        *,
        http: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        on_outcome: Callable[[str], None] | None = None,
        rng: random.Random | None = None,
        resolver: Resolver = resolve,
    ) -> None:
        self.store = store
        self.config = config
        self._signing_key = signing_key  # tenant → the key its webhooks are signed with
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(follow_redirects=False, trust_env=False)
        self._sleep = sleep
        self._on_outcome = on_outcome or (lambda _outcome: None)
        self._rng = rng or random.Random()
        self._resolve = resolver
        self._tasks: set[asyncio.Task[None]] = set()
        self._by_tenant: Counter[str] = Counter()

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def in_flight_of(self, tenant: str) -> int:
        return self._by_tenant[tenant]

    def notify(self, tenant: str, url: str, event: RunEvent) -> None:
        """Schedule the delivery of `event` (if its type is delivered); returns at once."""
        if event.type not in self.config.events:
            return
        busy = self._by_tenant[tenant] >= self.config.max_in_flight_per_tenant
        if busy or len(self._tasks) >= self.config.max_in_flight:
            logger.warning("webhook of run %s: %d deliveries in flight (%d of its tenant); event %d dropped",
                           event.run_id, len(self._tasks), self._by_tenant[tenant], event.seq)  # fmt: skip
            self._on_outcome("dropped")
            return
        task = asyncio.get_running_loop().create_task(self._deliver(tenant, url, event), name=f"webhook-{event.run_id}")
        self._tasks.add(task)
        self._by_tenant[tenant] += 1
        task.add_done_callback(lambda done: self._finished(tenant, done))

    def _finished(self, tenant: str, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._by_tenant[tenant] -= 1
        if self._by_tenant[tenant] <= 0:
            del self._by_tenant[tenant]

    async def drain(self) -> None:
        """Wait for every delivery in flight (tests, clean shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._own_http:
            await self._http.aclose()

    async def _deliver(self, tenant: str, url: str, event: RunEvent) -> None:
        body = payload(tenant, event, self.config.max_payload_bytes)
        delivery = WebhookDelivery(seq=event.seq, event=event.type, state="pending", updated_at=time.time())
        await self._record(tenant, event.run_id, delivery)
        host = urlsplit(url).hostname
        for attempt in range(1, self.config.max_attempts + 1):
            status, error = await self._attempt(tenant, url, event, body)
            done = status is not None and 200 <= status < 300
            final = done or attempt == self.config.max_attempts
            delivery = delivery.model_copy(
                update={
                    "state": "delivered" if done else ("failed" if final else "pending"),
                    "attempts": attempt,
                    "status_code": status,
                    "error": error,
                    "updated_at": time.time(),
                }
            )
            await self._record(tenant, event.run_id, delivery)
            if done:
                self._on_outcome("delivered")
                return
            if final:
                logger.warning("webhook of run %s to %s: event %d given up after %d attempts (%s)", event.run_id,
                               host, event.seq, attempt, error or status)  # fmt: skip
                self._on_outcome("failed")
                return
            self._on_outcome("retried")
            await self._sleep(self._delay(attempt))

    async def _attempt(self, tenant: str, url: str, event: RunEvent, body: bytes) -> tuple[int | None, str | None]:
        """(HTTP status, error text) of one POST to the address the host resolves to now, checked and
        pinned; the answer's body is never read. The error text a tenant sees is the same for every
        way of getting no HTTP answer; the operator's log says which."""
        try:
            check_webhook_url(url, self.config)  # the settings may have changed since the run was created
        except WebhookRefused as exc:
            return None, str(exc)
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or DEFAULT_PORTS.get(parts.scheme, 443)
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            EVENT_HEADER: event.type,
            DELIVERY_HEADER: f"{event.run_id}:{event.seq}",
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: sign(self._signing_key(tenant), timestamp, body),
        }
        try:
            async with asyncio.timeout(self.config.timeout_s):
                addresses = await self._resolve(host, port)
                if not addresses or not all(address_allowed(address, self.config) for address in addresses):
                    return None, "webhook_url's host resolves to a loopback, private or reserved address"
                target, headers["Host"] = pinned(url, addresses[0])
                extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
                request = self._http.build_request(
                    "POST", target, content=body, headers=headers, extensions=extensions
                )
                response = await self._http.send(request, stream=True, follow_redirects=False)
                await response.aclose()
        except (TimeoutError, OSError, httpx.HTTPError) as exc:
            logger.info("webhook of run %s to %s:%s: %s", event.run_id, host, port, type(exc).__name__)
            return None, UNREACHABLE
        error = None if 200 <= response.status_code < 300 else f"HTTP {response.status_code}"
        return response.status_code, error

    def _delay(self, failed_attempts: int) -> float:
        raw = self.config.backoff_base_s * (2 ** (failed_attempts - 1))
        return min(self.config.backoff_max_s, raw * (1.0 + 0.1 * self._rng.random()))

    async def _record(self, tenant: str, run_id: str, delivery: WebhookDelivery) -> None:
        try:
            await self.store.save_delivery(tenant, run_id, delivery)
        except Exception as exc:  # noqa: BLE001 - the state is informative; delivery goes on (RunStoreError…)
            logger.warning("webhook of run %s: delivery state not stored: %s", run_id, exc)

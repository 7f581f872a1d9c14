"""Webhooks: a run's events POSTed to a URL of the client's, signed, retried, never blocking the run.

A run may carry a `webhook_url`. It must be `http(s)://HOST[:PORT]/…` with HOST exactly one of
`webhooks.allowed_hosts` (no credentials in it, nothing else: an empty list refuses every webhook).
When the run appends one of `webhooks.events` (default `awaiting_approval`, `escalated`,
`run_finished`), the driver hands it to the `WebhookNotifier`, which delivers it in a background
task: the run goes on at once.

Each delivery is one JSON body (`{"id", "type", "run_id", "tenant", "seq", "round", "node_id",
"ts", "data"}`, at most `webhooks.max_payload_bytes`: larger event data is replaced by
`{"truncated": true}`) with the headers

    X-Planstack-Event: run_finished
    X-Planstack-Delivery: run_0123…:17          (run id : event seq — the same on every retry)
    X-Planstack-Timestamp: 1767225600
    X-Planstack-Signature: sha256=HEX          HMAC-SHA256(server secret, "<timestamp>." + body)

A 2xx answer delivers it. Anything else (a 3xx too: redirects are never followed), a timeout
(`webhooks.timeout_s`) or a connection error is retried with exponential backoff up to
`webhooks.max_attempts`; the receiver's body is never read. Every attempt's outcome is stored
(`RunStore.save_delivery`) and shown with the run. Delivery is at least once: receivers dedupe on
the delivery id. Deliveries still in flight when the gateway stops are not resumed (their state
stays `pending`).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field

from contract.errors import PlanstackBaseError
from executors.stores import RunEvent, WebhookDeliveries, WebhookDelivery

logger = logging.getLogger("planstack.executors.webhooks")

SIGNATURE_HEADER = "X-Planstack-Signature"
TIMESTAMP_HEADER = "X-Planstack-Timestamp"
DELIVERY_HEADER = "X-Planstack-Delivery"
EVENT_HEADER = "X-Planstack-Event"


class WebhooksConfig(BaseModel):
    """Settings section `webhooks`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allowed_hosts: list[str] = Field(
        default_factory=list, description="Host names a webhook_url may point to (exact match); empty: none."
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
    return url


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
    """Delivers run events in background tasks (one per event), bounded in number."""

    def __init__(
        self,
        store: WebhookDeliveries,
        config: WebhooksConfig,
        secret: bytes,
        *,
        http: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        on_outcome: Callable[[str], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self._secret = secret
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(follow_redirects=False, trust_env=False)
        self._sleep = sleep
        self._on_outcome = on_outcome or (lambda _outcome: None)
        self._rng = rng or random.Random()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def notify(self, tenant: str, url: str, event: RunEvent) -> None:
        """Schedule the delivery of `event` (if its type is delivered); returns at once."""
        if event.type not in self.config.events:
            return
        if len(self._tasks) >= self.config.max_in_flight:
            logger.warning("webhook of run %s: %d deliveries in flight; event %d dropped", event.run_id,
                           len(self._tasks), event.seq)  # fmt: skip
            self._on_outcome("dropped")
            return
        task = asyncio.get_running_loop().create_task(self._deliver(tenant, url, event), name=f"webhook-{event.run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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
            status, error = await self._attempt(url, event, body)
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

    async def _attempt(self, url: str, event: RunEvent, body: bytes) -> tuple[int | None, str | None]:
        """(HTTP status, error text) of one POST; the answer's body is never read."""
        if not self.config.allowed_hosts:
            return None, "webhooks are disabled (webhooks.allowed_hosts is empty)"
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            EVENT_HEADER: event.type,
            DELIVERY_HEADER: f"{event.run_id}:{event.seq}",
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: sign(self._secret, timestamp, body),
        }
        try:
            async with asyncio.timeout(self.config.timeout_s):
                request = self._http.build_request("POST", url, content=body, headers=headers)
                response = await self._http.send(request, stream=True, follow_redirects=False)
                await response.aclose()
        except TimeoutError:
            return None, f"no answer within {self.config.timeout_s:g} s"
        except httpx.HTTPError as exc:
            return None, f"{type(exc).__name__}"[:200]
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

"""Issue 19, item 5: webhooks. Signed with a key of the tenant's own, derived for that purpose only; the
host's RESOLVED addresses checked at every attempt (no loopback or private target unless the operator
allows it) and the connection pinned to the checked address; the port allow-listed; delivery errors
that do not tell which ports answer; the in-flight cap per tenant.

Real HTTP receivers on loopback (ServerThread) and real sockets; the run store is replaced by a
recorder of delivery states (the store is not what these tests are about)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response

from executors.stores import RunEvent, WebhookDelivery
from executors.webhooks import UNREACHABLE, WebhookNotifier, WebhookRefused, WebhooksConfig, check_webhook_url
from serving.isolation import CacheSalter, webhook_signing_key
from tests.fakes.upstream import ServerThread

pytestmark = pytest.mark.timeout(120)
SECRET = b"webhook-test-secret-0123456789ab"


@dataclass
class Recorder:
    """Delivery states as the notifier stores them."""

    states: list[WebhookDelivery] = field(default_factory=list)

    async def save_delivery(self, tenant: str, run_id: str, delivery: WebhookDelivery) -> None:
        self.states.append(delivery)


@dataclass
class Receiver:
    stall_s: float = 0.0
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/hook")
        async def hook(request: Request) -> Response:
            body = await request.body()
            with self.lock:
                self.received.append((dict(request.headers), body))
            await asyncio.sleep(self.stall_s)
            return Response(status_code=204)

        return app


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, int]]:
    hook = Receiver()
    server = ServerThread(hook.app()).start()
    try:
        yield hook, int(server.url.rsplit(":", 1)[1])
    finally:
        server.stop()


def event(seq: int = 1) -> RunEvent:
    return RunEvent(run_id="run_0123456789abcdef", seq=seq, type="run_finished", data={"status": "succeeded"})


def config(port: int, **extra: Any) -> WebhooksConfig:
    values: dict[str, Any] = {
        "allowed_hosts": ["127.0.0.1", "localhost", "hooks.invalid"],
        "allowed_ports": [port],
        "max_attempts": 1,
        "timeout_s": 2.0,
        **extra,
    }
    return WebhooksConfig(**values)


def deliver(hooks: WebhooksConfig, url: str, tenant: str = "tenantA", **kwargs: Any) -> list[WebhookDelivery]:
    recorder = Recorder()

    async def go() -> None:
        notifier = WebhookNotifier(recorder, hooks, lambda t: webhook_signing_key(SECRET, t), **kwargs)  # type: ignore[arg-type]
        notifier.notify(tenant, url, event())
        await notifier.drain()
        await notifier.aclose()

    asyncio.run(go())
    return recorder.states


def test_webhooks_are_signed_with_the_tenants_own_key(receiver: tuple[Receiver, int]) -> None:
    hook, port = receiver
    states = deliver(config(port, allow_private_addresses=True), f"http://127.0.0.1:{port}/hook")
    assert states[-1].state == "delivered", states
    headers, body = hook.received[0]
    signed = headers["x-planstack-timestamp"].encode() + b"." + body

    def signature(key: bytes) -> str:
        return "sha256=" + hmac.new(key, signed, hashlib.sha256).hexdigest()

    own, other = webhook_signing_key(SECRET, "tenantA"), webhook_signing_key(SECRET, "tenantB")
    assert headers["x-planstack-signature"] == signature(own)
    assert headers["x-planstack-signature"] not in (signature(SECRET), signature(other))
    salt = CacheSalter("tenant", SECRET).salt("tenantA")  # the key tells nothing about the salts either
    assert own.hex() != salt and len({own, other, SECRET}) == 3


def test_a_host_that_resolves_to_loopback_is_refused_unless_allowed(receiver: tuple[Receiver, int]) -> None:
    hook, port = receiver
    states = deliver(config(port), f"http://localhost:{port}/hook")  # resolved by the system: 127.0.0.1 / ::1
    assert (states[-1].state, states[-1].status_code) == ("failed", None) and "private" in (states[-1].error or "")
    assert hook.received == []
    with pytest.raises(WebhookRefused, match="loopback"):
        check_webhook_url(f"http://127.0.0.1:{port}/hook", config(port))  # a literal is refused at once
    with pytest.raises(WebhookRefused, match="port"):
        check_webhook_url("http://localhost:8081/hook", config(port, allow_private_addresses=True))
    assert check_webhook_url("https://localhost/hook", config(443, allow_private_addresses=True))


def test_the_connection_goes_to_the_address_that_was_checked(receiver: tuple[Receiver, int]) -> None:
    """`hooks.invalid` exists in no DNS (the .invalid domain is reserved): it is delivered only because
    the connection uses the address the check resolved, with the host's name in the Host header."""
    hook, port = receiver
    resolved: list[str] = []

    async def resolver(host: str, port_: int) -> list[str]:
        resolved.append(host)
        return ["127.0.0.1"]

    hooks = config(port, allow_private_addresses=True)
    states = deliver(hooks, f"http://hooks.invalid:{port}/hook", resolver=resolver)
    assert states[-1].state == "delivered" and resolved == ["hooks.invalid"]
    assert hook.received[0][0]["host"] == f"hooks.invalid:{port}"


def test_delivery_errors_do_not_tell_which_ports_answer() -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()  # nothing listens: connection refused
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts the connection, never answers: a timeout
    silent_port = silent.getsockname()[1]
    try:
        hooks = WebhooksConfig(
            allowed_hosts=["127.0.0.1"], allowed_ports=[closed_port, silent_port], allow_private_addresses=True,
            max_attempts=1, timeout_s=0.5,
        )  # fmt: skip
        errors = {deliver(hooks, f"http://127.0.0.1:{p}/hook")[-1].error for p in (closed_port, silent_port)}
    finally:
        silent.close()
    assert errors == {UNREACHABLE}


def test_the_in_flight_cap_is_per_tenant(receiver: tuple[Receiver, int]) -> None:
    hook, port = receiver
    hook.stall_s = 1.0
    hooks = config(port, allow_private_addresses=True, max_in_flight_per_tenant=2)
    outcomes: list[str] = []
    url = f"http://127.0.0.1:{port}/hook"

    async def go() -> tuple[int, int]:
        notifier = WebhookNotifier(
            Recorder(),
            hooks,
            lambda t: webhook_signing_key(SECRET, t),
            on_outcome=outcomes.append,  # type: ignore[arg-type]
        )
        for seq in range(3):
            notifier.notify("tenantA", url, event(seq))
        notifier.notify("tenantB", url, event(9))
        counts = notifier.in_flight_of("tenantA"), notifier.in_flight_of("tenantB")
        await notifier.drain()
        await notifier.aclose()
        return counts

    assert asyncio.run(go()) == (2, 1)
    assert outcomes.count("dropped") == 1 and outcomes.count("delivered") == 3

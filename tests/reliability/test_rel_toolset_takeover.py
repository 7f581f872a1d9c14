"""A POST of a tenant's OpenAPI service creates exactly once across a gateway SIGKILL and a takeover by
another replica, on both store backends (one SQLite file; one REAL PostgreSQL database).

Two real gateway processes (tests/reliability/env_gateway.py, configured from the environment: the
same API keys and server secret, their own home folders, one run store, short leases) and the billing
service with fault controls (tests/toolsets/billing_plus.py). A run on gateway A looks a customer up
(GET) and creates an invoice (POST); the service commits the invoice and holds its answer; A is
SIGKILLed; B takes the run over once A's lease expired, opens the toolset's credential sealed by A,
and sends the POST again with the same Idempotency-Key (run, round, node): the service replays the
invoice it created. One creation, one replay, the run succeeded, and the lookup was not re-executed.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import API_KEYS, KEY_A
from tests.fakes.upstream import free_port
from tests.sources.conftest import ServiceProcess
from tests.toolsets.conftest import billing_document, billing_stats

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
EGRESS = json.dumps({"cidrs": ["127.0.0.0/8"], "ports": ["1024-65535"], "schemes": ["http"]})


class Gateway:
    def __init__(self, name: str, tmp_path: Path, store_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "PLANSTACK_HOME": str(tmp_path / name),
            "PLANSTACK_API_KEYS": API_KEYS,
            "PLANSTACK_SECRET": "takeover-test-secret-0123456789abcdef",
            "PLANSTACK_ENGINE__PORT": "1",
            "PLANSTACK_RUNS__STORE_URL": store_url,
            "PLANSTACK_RUNS__LEASE_TTL_S": "3",
            "PLANSTACK_RUNS__HEARTBEAT_S": "0.5",
            "PLANSTACK_RUNS__TAKEOVER_INTERVAL_S": "0.5",
            "PLANSTACK_RUNS__FOLLOW_POLL_S": "0.2",
            "PLANSTACK_TOOLS__EGRESS": EGRESS,
        }
        command = [sys.executable, "-m", "uvicorn", "--factory", "tests.reliability.env_gateway:app",
                   "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"]  # fmt: skip
        self.proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        with self.client() as client:
            for _ in range(900):
                assert self.proc.poll() is None, f"gateway {name} exited during start-up"
                with contextlib.suppress(httpx.TransportError):
                    if client.get("/v1/toolsets").status_code == 200:
                        return
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=0.1)  # a pause that notices an early exit
        raise AssertionError(f"gateway {name} did not start")

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # SIGKILL: its lease is not released
        self.proc.wait(timeout=30)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'shared' / 'runs.sqlite3'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def billing(tmp_path: Path) -> Iterator[ServiceProcess]:
    service = ServiceProcess("tests.toolsets.billing_plus", tmp_path).start()
    yield service
    service.stop()


def test_a_post_creates_once_across_a_gateway_sigkill_and_a_takeover(
    tmp_path: Path, store_url: str, billing: ServiceProcess
) -> None:
    a = Gateway("a", tmp_path, store_url)
    b = Gateway("b", tmp_path, store_url)
    try:
        with a.client() as client:
            body = {"name": "billing", "kind": "openapi", "document": billing_document(billing),
                    "base_url": billing.url, "auth": {"kind": "bearer", "secret": "sk-takeover-secret"}}  # fmt: skip
            assert client.post("/v1/toolsets", json=body).status_code == 201
            httpx.post(f"{billing.url}/_faults", json={"hold_after_create": True}, timeout=10)
            plan = {"nodes": [
                {"id": "n1", "tool": "searchCustomers", "args": {"name": "initech"}},
                {"id": "n2", "tool": "createInvoice", "args": {"customerId": "$n1.customers.0.id", "amountCents": 990}},
            ]}  # fmt: skip
            created = client.post(
                "/v1/runs", json={"request": "invoice Initech", "toolsets": ["billing"], "plan": plan}
            )
            assert created.status_code == 202, created.text
            run_id = created.json()["run_id"]
        deadline = time.monotonic() + 60
        while httpx.get(f"{billing.url}/_held", timeout=10).json()["held"] != 1:  # committed by the service
            assert time.monotonic() < deadline, "the creation never reached the service"
            time.sleep(0.05)
        assert billing_stats(billing)["invoicesCreated"] == 1
        a.kill()
        httpx.post(f"{billing.url}/_release", timeout=10)  # the held answer goes nowhere: A is gone
        with b.client() as client:
            deadline = time.monotonic() + 90
            while (view := client.get(f"/v1/runs/{run_id}").json())["status"] not in ("succeeded", "failed"):
                assert time.monotonic() < deadline, view["status"]
                time.sleep(0.1)
        assert view["status"] == "succeeded", view["error"]
        nodes = {r["node_id"]: r for r in view["nodes"]}
        stats = billing_stats(billing)
        assert stats == {"invoicesCreated": 1, "idempotentReplays": 1}  # exactly one creation for the node
        assert nodes["n2"]["output"]["id"] == "inv_0001" and nodes["n2"]["output"]["customerId"] == "cus_102"
        assert nodes["n1"]["attempts"] == 1  # committed before the kill: not re-executed
    finally:
        a.kill()
        b.kill()

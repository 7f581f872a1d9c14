"""Calling imported OpenAPI operations: request building, idempotency keys, answers and failures.

The service calls go to REAL services on loopback: the example billing service (`python -m
examples.openapi_service`, which counts the invoices it creates) and the misbehaving odd service."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import httpx
import pytest

from contract.plan import Plan
from examples.openapi_service.app import create_app
from executors.config import ExecutorConfig
from executors.errors import ToolArgumentError, ToolError, ToolTimeoutError
from executors.registry import ToolRegistry
from executors.scheduler import DagScheduler
from executors.sources.auth import AuthScheme
from executors.sources.credentials import SecretValue
from executors.sources.egress import ClientLimits, EgressPolicy
from executors.sources.errors import (
    RedirectRefused,
    RemoteToolError,
    RemoteUnavailable,
    ResponseTooLarge,
    SourceError,
)
from executors.sources.http_binding import ArgumentBinding, HttpBinding
from executors.sources.http_caller import HttpToolSource, build_request, retry_after_s
from executors.sources.remote_spec import registry_with, source_specs
from executors.sources.tool_source import CallContext, RemoteTool, ToolPolicy, ToolSnapshot, call_scope
from serving.toolcalls.validation import argument_validator
from tests.fakes.upstream import ServerThread
from tests.sources.billing_tools import billing_snapshot
from tests.sources.conftest import ServiceProcess
from tests.sources.odd_service import OddService

T = TypeVar("T")
RUN = CallContext(tenant="tenantA", run_id="run-0001", round=0, node_id="n2")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def binding(method: str, path: str, *args: tuple[str, str, str], body: str = "none") -> HttpBinding:
    arguments = tuple(ArgumentBinding(argument=a, location=loc, name=n) for a, loc, n in args)  # type: ignore[arg-type]
    return HttpBinding(method=method, path=path, arguments=arguments, body=body)  # type: ignore[arg-type]


def odd_tool(name: str, method: str, path: str, *args: tuple[str, str, str], timeout_s: float = 10.0) -> RemoteTool:
    return RemoteTool(
        name=name,
        remote_name=name,
        description=f"{method} {path}",
        parameters={"type": "object"},
        policy=ToolPolicy(retryable=method in ("GET", "PUT", "DELETE", "POST"), timeout_s=timeout_s),
        binding=binding(method, path, *args),
    )


def odd_source(url: str, policy: EgressPolicy, *tools: RemoteTool, **options: Any) -> HttpToolSource:
    return HttpToolSource("odd", url, ToolSnapshot(source_id="odd", tools=tools), policy=policy, **options)


def stats(service_url: str) -> dict[str, int]:
    return dict(httpx.get(f"{service_url}/stats", timeout=10).json())


# -- building requests (no network) ---------------------------------------------------------------


def test_requests_follow_the_binding() -> None:
    spec = binding(
        "GET",
        "/orders/{orderId}/lines",
        ("orderId", "path", "orderId"),
        ("status", "query", "status"),
        ("limit", "query", "limit"),
        ("open", "query", "open"),
        ("traceId", "header", "X-Trace-Id"),
    )
    request = build_request(
        spec,
        {"orderId": "a/b c?", "status": ["new", "paid"], "limit": 5, "open": True, "traceId": "t-1"},
        base_url="https://api.example.com/v2/",
    )
    assert request.method == "GET"
    assert request.url.raw_path == b"/v2/orders/a%2Fb%20c%3F/lines?status=new&status=paid&limit=5&open=true"
    assert request.headers["x-trace-id"] == "t-1" and "idempotency-key" not in request.headers


def test_json_bodies_and_the_idempotency_key() -> None:
    props = binding(
        "POST", "/invoices", ("customerId", "body", "customerId"), ("memo", "body", "memo"), body="properties"
    )
    request = build_request(props, {"customerId": "cus_1", "memo": None}, base_url="http://h", idempotency_key="k-1")
    assert request.read() == b'{"customerId": "cus_1", "memo": null}'
    assert request.headers["content-type"] == "application/json" and request.headers["idempotency-key"] == "k-1"
    whole = binding("PUT", "/doc", ("body", "body", ""), body="whole")
    assert build_request(whole, {"body": [1, {"a": "é"}]}, base_url="http://h").read() == '[1, {"a": "é"}]'.encode()


def test_form_bodies_repeat_list_keys_and_leave_nulls_out() -> None:
    fields = (("To", "body", "To"), ("Body", "body", "Body"), ("Flag", "body", "Flag"), ("Meta", "body", "Meta"))
    form = binding("POST", "/Messages", *fields, ("Skip", "body", "Skip"), body="properties")
    form = form.model_copy(update={"encoding": "form"})
    args = {"To": ["+1555", "+1666"], "Body": "Hi é & bye", "Flag": True, "Meta": {"k": 1}, "Skip": None}
    request = build_request(form, args, base_url="http://h")
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert request.read() == b"To=%2B1555&To=%2B1666&Body=Hi+%C3%A9+%26+bye&Flag=true&Meta=%7B%22k%22%3A1%7D"


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"id": ".."}, "path segment"),
        ({"id": ""}, "path segment"),
        ({}, "has no value"),
        ({"id": "1", "extra": 1}, "no place"),
        ({"id": "1", "auth": "Bearer stolen"}, "set by planstack"),
        ({"id": "1", "host": "evil"}, "set by planstack"),
        ({"id": "1", "trace": "a\r\nX-Injected: 1"}, "line breaks"),
    ],
)
def test_arguments_that_do_not_fit_are_refused(args: dict[str, Any], problem: str) -> None:
    spec = binding(
        "GET",
        "/items/{id}",
        ("id", "path", "id"),
        ("auth", "header", "Authorization"),
        ("host", "header", "Host"),
        ("trace", "header", "X-Trace"),
    )
    with pytest.raises(ToolArgumentError, match=problem):
        build_request(spec, args, base_url="http://h", protected_headers=frozenset({"Authorization"}))


def test_the_idempotency_key_is_stable_per_run_round_and_node() -> None:
    key = RUN.idempotency_key()
    assert key is not None and key == CallContext(tenant="other", run_id="run-0001", node_id="n2").idempotency_key()
    others = {
        CallContext(run_id="run-0001", round=1, node_id="n2").idempotency_key(),
        CallContext(run_id="run-0001", round=0, node_id="n3").idempotency_key(),
        CallContext(run_id="run-0002", round=0, node_id="n2").idempotency_key(),
    }
    assert key not in others and len(others) == 3
    assert CallContext(tenant="tenantA").idempotency_key() is None


def test_retry_after_is_read_in_seconds_or_as_a_date() -> None:
    assert retry_after_s("7") == 7.0
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after_s(None) is None and retry_after_s("soon") is None


# -- the billing service: lookup feeding a creation, exactly once --------------------------------


def billing_source(url: str, policy: EgressPolicy, *, create_timeout_s: float = 10.0) -> HttpToolSource:
    return HttpToolSource("billing", url, billing_snapshot(create_timeout_s=create_timeout_s), policy=policy)


def test_a_lookup_feeds_a_creation_and_a_retried_post_creates_once(
    billing: ServiceProcess, loopback_policy: EgressPolicy
) -> None:
    before = stats(billing.url)
    source = billing_source(billing.url, loopback_policy)
    snapshot = source.snapshot()

    async def go() -> tuple[Any, Any, Any, Any]:
        try:
            found = await source.call(snapshot.get("searchCustomers"), {"name": "acme"}, CallContext())
            args = {"customerId": found["customers"][0]["id"], "amountCents": 1250, "dueDate": "2026-07-01"}
            create = snapshot.get("createInvoice")
            first = await source.call(create, args, RUN)
            again = await source.call(create, args, RUN)  # a retry, or a takeover: same run, round, node
            other = await source.call(create, args, CallContext(run_id="run-0001", round=0, node_id="n3"))
            return found, first, again, other
        finally:
            await source.aclose()

    found, first, again, other = run(go())
    assert found["customers"][0]["id"] == "cus_100"
    assert first["customerId"] == "cus_100" and first["dueDate"] == "2026-07-01"
    assert again["id"] == first["id"] and other["id"] != first["id"]
    after = stats(billing.url)
    assert after["invoicesCreated"] - before["invoicesCreated"] == 2  # the retry created nothing
    assert after["idempotentReplays"] - before["idempotentReplays"] == 1


def test_client_errors_are_not_retried_and_carry_the_answer(
    billing: ServiceProcess, loopback_policy: EgressPolicy
) -> None:
    source = billing_source(billing.url, loopback_policy)
    create = source.snapshot().get("createInvoice")

    async def failure(args: dict[str, Any]) -> RemoteToolError:
        with pytest.raises(RemoteToolError) as failed:
            await source.call(create, args, CallContext(run_id="run-x", node_id="n9"))
        return failed.value

    async def go() -> tuple[RemoteToolError, RemoteToolError]:
        try:
            return await failure({"customerId": "cus_999", "amountCents": 5}), await failure(
                {"customerId": "cus_100", "amountCents": 0}
            )
        finally:
            await source.aclose()

    missing, invalid = run(go())
    assert missing.retryable is False and missing.data["status"] == 404 and "cus_999" in missing.data["message"]
    assert missing.structured()["data"]["status"] == 404
    assert invalid.data["status"] == 422


class HoldFirstCreation:
    """ASGI middleware: the first POST /invoices is handled by the service (the invoice IS created)
    but its answer is held until POST /release, like a reply lost after the commit."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.released = asyncio.Event()
        self.held = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/release":
            self.released.set()
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/invoices" and not self.held:
            self.held += 1
            answer: list[dict[str, Any]] = []

            async def keep(message: dict[str, Any]) -> None:
                answer.append(message)

            await self.app(scope, receive, keep)
            await self.released.wait()
            return  # the client gave up long ago; the answer is dropped
        await self.app(scope, receive, send)


@pytest.fixture
def held_billing() -> Iterator[str]:
    server = ServerThread(HoldFirstCreation(create_app())).start()
    yield server.url
    httpx.post(f"{server.url}/release", timeout=10)
    server.stop()


def create_plan() -> Plan:
    return Plan.model_validate(
        {
            "nodes": [
                {"id": "n1", "tool": "searchCustomers", "args": {"name": "Globex"}},
                {
                    "id": "n2",
                    "tool": "createInvoice",
                    "args": {"customerId": "$n1.customers.0.id", "amountCents": 990, "dueDate": "2026-08-15"},
                },
            ]
        }
    )


def run_create_plan(url: str, policy: EgressPolicy, context: CallContext | None) -> Any:
    source = billing_source(url, policy, create_timeout_s=1.0)
    registry = registry_with(ToolRegistry(), source_specs(source, schema_check=argument_validator))
    scheduler = DagScheduler(registry, ExecutorConfig(backoff_base_s=0.01, backoff_jitter=0.0))

    async def go() -> Any:
        try:
            if context is None:
                return await scheduler.run_plan(create_plan())
            with call_scope(context):  # what the run service will set around each node's call
                return await scheduler.run_plan(create_plan())
        finally:
            await source.aclose()

    return run(go())


def test_the_scheduler_retries_a_post_whose_answer_was_lost_and_it_creates_once(
    held_billing: str, loopback_policy: EgressPolicy
) -> None:
    outcome = run_create_plan(held_billing, loopback_policy, RUN)
    created = outcome.results["n2"]
    assert outcome.ok and created.status == "succeeded" and created.attempts == 2
    assert created.output["customerId"] == "cus_101" and created.output["dueDate"] == "2026-08-15"
    assert stats(held_billing) == {"invoicesCreated": 1, "idempotentReplays": 1}


def test_without_a_run_context_a_post_is_never_retried(held_billing: str, loopback_policy: EgressPolicy) -> None:
    outcome = run_create_plan(held_billing, loopback_policy, None)
    failed = outcome.results["n2"]
    assert failed.status == "failed" and failed.attempts == 1
    assert failed.error is not None and failed.error["type"] == "timeout" and failed.error["retryable"] is False
    assert stats(held_billing)["invoicesCreated"] == 1  # the lost answer's invoice, and nothing more


# -- answers the caller refuses or bounds ---------------------------------------------------------


def test_redirects_large_and_slow_answers(odd_service: OddService, loopback_policy: EgressPolicy) -> None:
    tools = (
        odd_tool("redirect", "GET", "/redirect"),
        odd_tool("big", "GET", "/big", ("size", "query", "size")),
        odd_tool("slow_get", "GET", "/slow", timeout_s=0.5),
        odd_tool("slow_post", "POST", "/slow", timeout_s=0.5),
        odd_tool("text", "GET", "/text"),
    )
    source = odd_source(odd_service.url, loopback_policy, *tools, limits=ClientLimits(max_response_bytes=10_000))
    snap = source.snapshot()

    async def go(name: str, args: dict[str, Any], context: CallContext = CallContext()) -> Any:
        return await source.call(snap.get(name), args, context)

    async def scenario() -> None:
        try:
            with pytest.raises(RedirectRefused):
                await go("redirect", {})
            with pytest.raises(ResponseTooLarge):
                await go("big", {"size": 50_000})
            assert await go("text", {}) == {"text": "plain words"}
            with pytest.raises(ToolTimeoutError) as slow_get:
                await go("slow_get", {})
            assert slow_get.value.retryable is True
            with pytest.raises(ToolTimeoutError) as slow_post:
                await go("slow_post", {})
            assert slow_post.value.retryable is False  # no idempotency key: sending again could repeat it
        finally:
            await source.aclose()

    run(scenario())
    assert odd_service.hits["redirect"] == 1 and odd_service.hits["echo"] == 0


@pytest.mark.parametrize(
    ("method", "status", "retry_after", "context", "retryable", "delay"),
    [
        ("GET", 503, "2", CallContext(), True, 2.0),
        ("GET", 503, "3600", CallContext(), False, None),
        ("GET", 408, None, CallContext(), True, None),
        ("POST", 429, "1", CallContext(), False, 1.0),
        ("POST", 429, "1", RUN, True, 1.0),
        ("POST", 500, None, RUN, True, None),
    ],
)
def test_unavailable_answers_are_retryable_only_when_safe(
    odd_service: OddService,
    loopback_policy: EgressPolicy,
    method: str,
    status: int,
    retry_after: str | None,
    context: CallContext,
    retryable: bool,
    delay: float | None,
) -> None:
    tool = odd_tool("status", method, f"/status/{status}", ("retry_after", "query", "retry_after"))
    source = odd_source(odd_service.url, loopback_policy, tool)

    async def go() -> RemoteUnavailable:
        try:
            with pytest.raises(RemoteUnavailable) as failed:
                await source.call(tool, {"retry_after": retry_after}, context)
            return failed.value
        finally:
            await source.aclose()

    error = run(go())
    assert error.retryable is retryable and error.retry_delay_s == delay
    assert error.data["status"] == status and "odd service" in error.data["message"]


def test_credentials_reach_the_service_and_nothing_else(
    odd_service: OddService, loopback_policy: EgressPolicy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = "sk-live-0a1b2c3d4e5f-never-log-me"
    tool = odd_tool("echo", "POST", "/echo", ("note", "body", "note"))
    tool = tool.model_copy(update={"binding": binding("POST", "/echo", ("note", "body", "note"), body="properties")})
    source = odd_source(
        odd_service.url,
        loopback_policy,
        tool,
        auth=AuthScheme(kind="api_key_header", header="X-Api-Key"),
        secret=SecretValue(token),
    )

    async def go() -> Any:
        try:
            return await source.call(tool, {"note": "hi"}, RUN)
        finally:
            await source.aclose()

    echoed = run(go())
    assert echoed["headers"]["x-api-key"] == token and echoed["headers"]["idempotency-key"] == RUN.idempotency_key()
    assert echoed["body"] == '{"note": "hi"}'
    assert token not in caplog.text and token not in repr(source.__dict__)


def test_a_form_body_reaches_a_real_service_as_form_fields(
    odd_service: OddService, loopback_policy: EgressPolicy
) -> None:
    form = binding("POST", "/echo", ("Body", "body", "Body"), ("To", "body", "To"), body="properties")
    tool = odd_tool("echo", "POST", "/echo", ("Body", "body", "Body"), ("To", "body", "To"))
    tool = tool.model_copy(update={"binding": form.model_copy(update={"encoding": "form"})})
    source = odd_source(odd_service.url, loopback_policy, tool)

    async def go() -> Any:
        try:
            return await source.call(tool, {"Body": "Läuft um 10:00", "To": ["a@x.io", "b@x.io"]}, RUN)
        finally:
            await source.aclose()

    echoed = run(go())
    assert echoed["headers"]["content-type"] == "application/x-www-form-urlencoded"
    assert echoed["body"] == "Body=L%C3%A4uft+um+10%3A00&To=a%40x.io&To=b%40x.io"


def test_unusable_sources_are_refused_when_built(loopback_policy: EgressPolicy) -> None:
    snapshot = billing_snapshot()
    for url in ("http://127.0.0.1:8080/api?x=1", "http://127.0.0.1:8080/#frag"):
        with pytest.raises(SourceError):
            HttpToolSource("b", url, snapshot, policy=loopback_policy)
    with pytest.raises(ToolError):  # egress: refused when the toolset is built, not at the first call
        HttpToolSource("b", "http://127.0.0.1:80", snapshot, policy=loopback_policy)
    with pytest.raises(ValueError):  # a scheme that needs a secret, without one
        HttpToolSource("b", "http://127.0.0.1:8080", snapshot, policy=loopback_policy, auth=AuthScheme(kind="bearer"))

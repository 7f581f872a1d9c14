"""The one error funnel answers any planstack error from its class, whichever package raised it.

Unit tests of `error_body` on the real exception classes (no gateway), then one through a real app:
a `ValueError` raised by a bug inside planning is a 500, not a 400 blaming the request.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from executors.approvals import ApprovalExpired
from executors.errors import RunNotFound, ToolTimeoutError
from executors.quotas import PlanTooLarge
from executors.stores import RunBusy, RunStoreError, TooManyActiveRuns
from executors.webhooks import WebhookRefused
from planner.catalog import CatalogError
from planner.llm import LLMBusy, LLMRejected, LLMTimeout, LLMUnavailable
from planner.results import InvalidPlanningRequest, PlanningFailed
from retrieval.errors import CollectionNotFoundError, InvalidDemonstrationError
from serving.app import create_app
from serving.errors import error_body
from serving.settings import Settings
from serving.stack import build_stack
from tests.conftest import API_KEYS, KEY_A
from tests.fakes.llm import FakePlannerLLM


def answer(exc: BaseException) -> tuple[int, str, str | None, str | None, str, dict[str, str]]:
    status, body, headers = error_body(exc)
    error = body["error"]
    return status, error["type"], error["code"], error["param"], error["message"], headers


@pytest.mark.parametrize(
    ("exc", "status", "type_", "code", "param"),
    [
        (PlanningFailed("the fallback found nothing", []), 422, "invalid_request_error", "planning_failed", None),
        (InvalidPlanningRequest("the request is empty"), 400, "invalid_request_error", None, "request"),
        (CatalogError(["tools[0]: no name"]), 400, "invalid_request_error", None, "tools"),
        (WebhookRefused("webhook_url must not carry credentials"), 400, "invalid_request_error", None, "webhook_url"),
        (RunNotFound("run 'run_0' not found"), 404, "invalid_request_error", "run_not_found", None),
        (PlanTooLarge("the plan has 90 nodes"), 413, "invalid_request_error", "plan_too_large", "plan"),
        (ApprovalExpired("expired"), 409, "invalid_request_error", "approval_expired", None),
        (TooManyActiveRuns("8 runs executing"), 429, "rate_limit_error", "too_many_active_runs", None),
        (InvalidDemonstrationError("too long"), 400, "invalid_request_error", "demonstration_too_large", None),
        (CollectionNotFoundError("no such collection"), 404, "invalid_request_error", "collection_not_found", None),
        (ToolTimeoutError("the tool call timed out"), 500, "server_error", "timeout", None),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else None,
)
def test_each_package_error_answers_with_its_class_attributes(
    exc: BaseException, status: int, type_: str, code: str | None, param: str | None
) -> None:
    assert answer(exc)[:4] == (status, type_, code, param)


def test_retry_after_comes_from_the_error() -> None:
    busy = answer(RunBusy("run 'run_1' is being executed", expires_in_s=2.2))
    assert busy[:3] == (409, "invalid_request_error", "run_busy") and busy[5] == {"Retry-After": "3"}
    assert "follow it with /v1/runs/{id}/events" in busy[4]  # the hint travels with the message
    assert answer(TooManyActiveRuns("8 runs executing"))[5] == {"Retry-After": "5"}
    assert answer(PlanningFailed("x", []))[5] == {}


def test_engine_errors_never_show_the_engines_words() -> None:
    said = "grammar compile of /srv/models/x failed: internal detail"
    assert answer(LLMRejected(said, engine_status=500))[:5] == (
        502, "upstream_error", None, None, "the engine rejected the planner's request"
    )  # fmt: skip
    assert answer(LLMTimeout(said))[:5] == (504, "timeout", "engine_timeout", None, "the engine did not answer in time")
    unavailable = answer(LLMUnavailable(said, hint="it may be restarting"))
    assert unavailable[:5] == (503, "service_unavailable", "engine_unavailable", None, "the engine is not reachable")
    assert unavailable[5] == {"Retry-After": "5"}
    busy = answer(LLMBusy("too many requests in flight for this tenant"))
    assert busy[:5] == (429, "rate_limit_error", "too_many_requests", None, "too many requests in flight for this tenant")
    assert busy[5] == {"Retry-After": "1"}


def test_a_store_failure_is_a_typed_phrase_without_sqlites_words() -> None:
    try:
        raise RunStoreError("the run store cannot write /var/lib/planstack/runs.db") from sqlite3.OperationalError(
            "database or disk is full"
        )
    except RunStoreError as exc:
        status, type_, code, _, message, headers = answer(exc)
    assert (status, type_, code, headers) == (503, "service_unavailable", "run_store_unavailable", {"Retry-After": "5"})
    assert message.startswith("the run store is unavailable: ") and "runs.db" not in message


def test_an_exception_outside_the_root_is_a_bare_500() -> None:
    assert answer(ValueError("secret internals"))[:5] == (
        500, "server_error", "internal_error", None, "internal server error"
    )  # fmt: skip


def test_a_value_error_inside_planning_is_a_500_not_a_400(tmp_path: Path) -> None:
    """A bug in the planner used to be answered as a client's invalid request; now the request is not
    blamed, and a real client error (a request over `planner.request_max_chars`) still is."""
    llm = FakePlannerLLM(ValueError("a bug in the planner"))
    app = create_app(build_stack(Settings(home=tmp_path, api_keys=SecretStr(API_KEYS)), planner_llm=llm))
    auth = {"Authorization": f"Bearer {KEY_A}"}
    with TestClient(app, raise_server_exceptions=False) as client:
        bug = client.post("/v1/plans", json={"request": "Weather in Oslo tomorrow"}, headers=auth)
        long = {"model": "planner", "messages": [{"role": "user", "content": "weather " * 300}]}
        too_long = client.post("/v1/chat/completions", json=long, headers=auth)
    assert bug.status_code == 500 and bug.json()["error"]["code"] == "internal_error", bug.text
    assert "bug" not in bug.text
    assert too_long.status_code == 400 and too_long.json()["error"]["param"] == "request", too_long.text
    assert len(llm.history) == 1  # the over-long request never reached the model

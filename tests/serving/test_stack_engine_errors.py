"""Planner engine errors at the HTTP boundary: `/v1/plans`, the `planner` chat model and planning
inside `POST /v1/runs` answer like the chat relay does — 503 + Retry-After when the engine cannot
be reached (also when it goes away in the middle of planning), 504 when it stalls — and never with a
fallback plan or a 422. FAKE upstream (marker fake_upstream)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from serving.app import create_app
from tests.conftest import FAKE_MODEL, KEY_A, gateway_settings
from tests.fakes.upstream import FakeBehaviour, ServerThread, create_fake_upstream

pytestmark = pytest.mark.fake_upstream

REQUEST = "Flights Shanghai to Hangzhou on June 20 and the weather there."
PLANNING_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "plans": ("/v1/plans", {"request": REQUEST}),
    "planner_model": ("/v1/chat/completions", {"model": "planner", "messages": [{"role": "user", "content": REQUEST}]}),
    "runs": ("/v1/runs", {"request": REQUEST, "wait": True}),
}


@dataclass
class Gateway:
    url: str
    upstream: ServerThread
    behaviour: FakeBehaviour

    def post(self, route: str, body: dict[str, Any]) -> httpx.Response:
        headers = {"Authorization": f"Bearer {KEY_A}"}
        return httpx.post(self.url + route, json=body, headers=headers, timeout=60)


@pytest.fixture
def gateway_with(tmp_path: Any) -> Iterator[Callable[..., Gateway]]:
    started: list[ServerThread] = []

    def make(request_timeout_s: float = 30.0) -> Gateway:
        behaviour = FakeBehaviour()
        upstream = ServerThread(create_fake_upstream(FAKE_MODEL, behaviour)).start()
        settings = gateway_settings(tmp_path, upstream.url)
        settings.engine.request_timeout_s = request_timeout_s
        settings.engine.connect_timeout_s = 0.5
        gateway = ServerThread(create_app(settings, engine_model=FAKE_MODEL, model_dir=None)).start()
        started.extend([gateway, upstream])
        return Gateway(gateway.url, upstream, behaviour)

    yield make
    for server in started:
        server.stop()


def assert_engine_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text[:300]
    error = response.json()["error"]
    assert error["code"] == code and set(error) == {"message", "type", "param", "code"}
    assert "planstack" not in response.json(), "no plan (fallback or otherwise) in an engine error"


@pytest.mark.parametrize("call", sorted(PLANNING_CALLS))
def test_engine_unreachable_is_503_with_retry_after(gateway_with: Callable[..., Gateway], call: str) -> None:
    gateway = gateway_with()
    gateway.upstream.stop()
    response = gateway.post(*PLANNING_CALLS[call])
    assert_engine_error(response, 503, "engine_unavailable")
    assert int(response.headers["Retry-After"]) > 0


def test_engine_stopped_in_the_middle_of_planning_is_503(gateway_with: Callable[..., Gateway]) -> None:
    """The first planner call reaches the engine (a 1 s answer the planner cannot use, so it asks
    again); the engine stops while answering it: the next call finds no engine → 503, no fallback."""
    gateway = gateway_with()
    gateway.behaviour.delay_s = 1.0
    answers: list[httpx.Response] = []
    planning = threading.Thread(target=lambda: answers.append(gateway.post(*PLANNING_CALLS["plans"])))
    planning.start()
    deadline = time.monotonic() + 30
    while not gateway.behaviour.received:  # the planner's first engine call is in flight
        assert time.monotonic() < deadline, "the planner never called the engine"
        time.sleep(0.02)
    gateway.upstream.stop()  # finishes the request in flight, then the engine is gone
    planning.join(timeout=60)
    assert answers, "the plan request did not finish"
    assert_engine_error(answers[0], 503, "engine_unavailable")
    assert len(gateway.behaviour.received) == 1


@pytest.mark.parametrize("call", sorted(PLANNING_CALLS))
def test_a_stalled_engine_is_504(gateway_with: Callable[..., Gateway], call: str) -> None:
    gateway = gateway_with(request_timeout_s=0.5)
    gateway.behaviour.delay_s = 5
    started = time.monotonic()
    response = gateway.post(*PLANNING_CALLS[call])
    assert_engine_error(response, 504, "engine_timeout")
    assert len(gateway.behaviour.received) == 1, "a timeout is not retried into a longer wait"
    assert time.monotonic() - started < 5, "answered at the gateway's timeout, not the engine's"

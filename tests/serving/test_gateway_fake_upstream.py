"""Gateway behaviour against the FAKE upstream (tests/fakes): auth, errors, limits, forwarding, salts."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from tests.conftest import FAKE_MODEL, KEY_A, KEY_B, FakeStack

pytestmark = pytest.mark.fake_upstream

CHAT = "/v1/chat/completions"


def chat_body(**extra: object) -> dict[str, object]:
    return {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "hi"}], **extra}


def assert_openai_error(response: httpx.Response, status: int, param: str | None = None) -> dict[str, object]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"] and "Traceback" not in error["message"]
    if param is not None:
        assert error["param"] == param
    return error  # type: ignore[no-any-return]


def test_chat_is_relayed_with_a_server_side_salt_and_no_unknown_fields(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        response = client.post(CHAT, json=chat_body(temperature=0, some_sdk_extra={"x": 1}))
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "hello from the fake upstream"
    forwarded = fake_stack.behaviour.received[-1]
    assert "some_sdk_extra" not in forwarded
    assert len(forwarded["cache_salt"]) == 64
    assert forwarded["temperature"] == 0


def test_streaming_is_relayed_as_sse(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client, client.stream("POST", CHAT, json=chat_body(stream=True)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    words = "".join(json.loads(line[6:])["choices"][0]["delta"]["content"] for line in lines[:-1])
    assert words.strip() == "hello from the fake upstream"


@pytest.mark.parametrize(
    ("headers", "code"),
    [({}, "invalid_api_key"), ({"Authorization": "Bearer nope-nope-nope"}, "invalid_api_key"),
     ({"Authorization": "Basic abc"}, "invalid_api_key")],
)  # fmt: skip
def test_missing_or_unknown_keys_get_401(fake_stack: FakeStack, headers: dict[str, str], code: str) -> None:
    response = httpx.post(fake_stack.gateway.url + CHAT, json=chat_body(), headers=headers)
    assert assert_openai_error(response, 401)["code"] == code


def test_models_lists_the_engine_model(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        data = client.get("/v1/models").json()["data"]
    assert [model["id"] for model in data] == [FAKE_MODEL, "planner", "all-minilm-l6-v2"]


def test_malformed_json_is_400(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        response = client.post(CHAT, content=b'{"model": ', headers={"Content-Type": "application/json"})
    assert assert_openai_error(response, 400)["code"] == "invalid_json"


def test_invalid_utf8_is_400(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        response = client.post(CHAT, content=b'{"model": "\xff\xfe"}', headers={"Content-Type": "application/json"})
    assert_openai_error(response, 400)


def test_unknown_model_is_404(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        response = client.post(CHAT, json={**chat_body(), "model": "gpt-17"})
    assert assert_openai_error(response, 404, param="model")["code"] == "model_not_found"


def test_oversized_body_is_413(fake_stack_factory: Callable[..., FakeStack]) -> None:
    stack = fake_stack_factory(gateway={"max_body_bytes": 2_000})
    with stack.gateway.client() as client:
        response = client.post(CHAT, json=chat_body(messages=[{"role": "user", "content": "x" * 5_000}]))
    assert_openai_error(response, 413)
    assert stack.behaviour.received == []


def test_oversized_prompt_is_400(fake_stack_factory: Callable[..., FakeStack]) -> None:
    stack = fake_stack_factory(gateway={"max_prompt_chars": 100})
    with stack.gateway.client() as client:
        response = client.post(CHAT, json=chat_body(messages=[{"role": "user", "content": "y" * 101}]))
    assert assert_openai_error(response, 400, param="messages")["code"] == "context_length_exceeded"


@pytest.mark.parametrize(
    ("extra", "param"),
    [({"temperature": 5}, "temperature"), ({"max_tokens": 0}, "max_tokens"), ({"max_tokens": 10**6}, "max_tokens"),
     ({"messages": []}, "messages"), ({"messages": [{"role": "wizard", "content": "x"}]}, "messages.0.role"),
     ({"n": 100}, "n"), ({"stop": ["a"] * 20}, "stop")],
)  # fmt: skip
def test_invalid_parameters_are_400_naming_the_parameter(
    fake_stack: FakeStack, extra: dict[str, object], param: str
) -> None:
    with fake_stack.gateway.client() as client:
        response = client.post(CHAT, json=chat_body(**extra))
    assert_openai_error(response, 400, param=param)
    assert fake_stack.behaviour.received == []


def test_client_cache_salt_is_rejected(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        response = client.post(CHAT, json=chat_body(cache_salt="attacker-chosen"))
    assert_openai_error(response, 400, param="cache_salt")
    assert fake_stack.behaviour.received == []


def test_client_cache_salt_can_be_dropped_instead(fake_stack_factory: Callable[..., FakeStack]) -> None:
    stack = fake_stack_factory(isolation={"client_salt": "drop"})
    with stack.gateway.client() as client:
        assert client.post(CHAT, json=chat_body(cache_salt="attacker-chosen")).status_code == 200
    assert stack.behaviour.received[-1]["cache_salt"] != "attacker-chosen"


def salts_for(stack: FakeStack, key: str, times: int, session: str | None = None) -> list[str]:
    headers = {"X-Planstack-Session": session} if session else {}
    with stack.gateway.client(key) as client:
        for _ in range(times):
            assert client.post(CHAT, json=chat_body(), headers=headers).status_code == 200
    return [body["cache_salt"] for body in stack.behaviour.received[-times:]]


def test_tenant_scope_shares_a_salt_within_a_tenant_only(fake_stack: FakeStack) -> None:
    a1, a2 = salts_for(fake_stack, KEY_A, 2)
    (b1,) = salts_for(fake_stack, KEY_B, 1)
    assert a1 == a2 != b1


def test_request_scope_never_repeats_a_salt(fake_stack_factory: Callable[..., FakeStack]) -> None:
    stack = fake_stack_factory(isolation={"scope": "request"})
    assert len(set(salts_for(stack, KEY_A, 3))) == 3


def test_session_scope_shares_within_a_session_of_one_tenant(fake_stack_factory: Callable[..., FakeStack]) -> None:
    stack = fake_stack_factory(isolation={"scope": "session"})
    s1, s2 = salts_for(stack, KEY_A, 2, session="conv-1")
    (other_session,) = salts_for(stack, KEY_A, 1, session="conv-2")
    (other_tenant,) = salts_for(stack, KEY_B, 1, session="conv-1")
    no_header = salts_for(stack, KEY_A, 2)
    assert s1 == s2
    assert len({s1, other_session, other_tenant, *no_header}) == 5


def test_bad_session_header_is_400(fake_stack_factory: Callable[..., FakeStack]) -> None:
    stack = fake_stack_factory(isolation={"scope": "session"})
    with stack.gateway.client() as client:
        response = client.post(CHAT, json=chat_body(), headers={"X-Planstack-Session": "../../etc"})
    assert_openai_error(response, 400, param="X-Planstack-Session")


def test_engine_errors_are_relayed_in_openai_shape(fake_stack: FakeStack) -> None:
    fake_stack.behaviour.status = 400
    fake_stack.behaviour.error_message = "This model's maximum context length is 2048 tokens"
    with fake_stack.gateway.client() as client:
        response = client.post(CHAT, json=chat_body())
    error = assert_openai_error(response, 400)
    assert "maximum context length" in str(error["message"])


def test_engine_timeout_is_504(fake_stack_factory: Callable[..., FakeStack]) -> None:
    stack = fake_stack_factory()
    stack.gateway.server.stop()
    # A gateway with a short upstream timeout in front of a stalling upstream.
    from serving.app import create_app
    from tests.conftest import gateway_settings
    from tests.fakes.upstream import ServerThread

    settings = gateway_settings(stack.gateway.settings.home, stack.upstream.url)
    settings.engine.request_timeout_s = 0.5
    gateway = ServerThread(create_app(settings, engine_model=FAKE_MODEL, model_dir=None)).start()
    stack.behaviour.delay_s = 3
    try:
        response = httpx.post(gateway.url + CHAT, json=chat_body(), headers={"Authorization": f"Bearer {KEY_A}"})
        assert assert_openai_error(response, 504)["code"] == "engine_timeout"
    finally:
        gateway.stop()


def test_engine_stopped_mid_test_gives_503_then_recovers(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        assert client.post(CHAT, json=chat_body()).status_code == 200
        assert client.get("/health").json()["engine"] == "ok"
        port = fake_stack.upstream.port
        fake_stack.upstream.stop()  # the engine goes away
        response = client.post(CHAT, json=chat_body())
        assert assert_openai_error(response, 503)["code"] == "engine_unavailable"
        assert int(response.headers["Retry-After"]) > 0
        health = client.get("/health")
        assert health.status_code == 503 and health.json()["engine"] == "unavailable"
        streamed = client.post(CHAT, json=chat_body(stream=True))
        assert_openai_error(streamed, 503)
        # The engine comes back on the same port: the gateway recovers without a restart.
        from tests.fakes.upstream import ServerThread, create_fake_upstream

        fake_stack.upstream = ServerThread(create_fake_upstream(FAKE_MODEL, fake_stack.behaviour), port=port).start()
        assert client.post(CHAT, json=chat_body()).status_code == 200
        assert client.get("/health").status_code == 200


def test_unknown_endpoint_is_openai_shaped_404(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        assert_openai_error(client.get("/v1/nothing-here"), 404)


def test_metrics_count_requests_errors_and_upstream_failures(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client() as client:
        client.post(CHAT, json=chat_body())
        client.post(CHAT, json={**chat_body(), "model": "nope"})
        fake_stack.upstream.stop()
        client.post(CHAT, json=chat_body())
        text = client.get("/metrics").text
    assert 'planstack_requests_total{route="/v1/chat/completions",status="200"} 1.0' in text
    assert 'planstack_errors_total{type="invalid_request_error"} 1.0' in text
    assert 'planstack_upstream_failures_total{reason="unavailable"} 1.0' in text
    assert "planstack_request_seconds_bucket" in text

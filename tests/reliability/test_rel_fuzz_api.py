"""Hostile input at the HTTP surface, against a real gateway in front of the FAKE upstream.

- schemathesis fuzzes every operation of the gateway's OpenAPI document (the request bodies, which
  the routes read themselves, are added to the document here from their pydantic models), valid and
  invalid cases: never a 500, never a stack trace, every error in the OpenAI shape;
- hand-written hostile cases: deeply nested and oversized JSON, invalid UTF-8 on every POST route,
  `cache_salt` smuggled in every place a client can put it, other tenants' and malformed run ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.generation import GenerationMode

from serving.plans.protocol import PlanCreate
from serving.protocol import ChatCompletionRequest
from serving.runs.protocol import RunCreate
from tests.conftest import FAKE_MODEL, KEY_A, KEY_B, FakeStack
from tests.reliability.helpers import REQUEST, TRIP, check_error_shape

pytestmark = pytest.mark.fake_upstream

FUZZ_EXAMPLES = 25  # per operation and generation mode
POST_ROUTES = ("/v1/chat/completions", "/v1/plans", "/v1/runs")
BODIES: dict[str, type[Any]] = {
    "/v1/chat/completions": ChatCompletionRequest,
    "/v1/plans": PlanCreate,
    "/v1/runs": RunCreate,
}
SENDABLE = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$")  # what an HTTP client can send
# framing headers the HTTP client writes itself: a generated `Transfer-Encoding: 0` is refused by h11 before
# anything reaches the gateway (a fresh clone's run drew one), so such a case tests the client, not the door
FRAMING = frozenset({"transfer-encoding", "content-length", "connection", "host", "upgrade", "te"})


def documented_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The gateway's OpenAPI document with the JSON bodies the routes read and the bearer key."""
    components = spec.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for path, model in BODIES.items():
        body = model.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
        schemas.update(body.pop("$defs", {}))
        schemas[model.__name__] = body
        spec["paths"][path]["post"]["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
        }
    components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    spec["security"] = [{"bearer": []}]
    return spec


def _send(http: httpx.Client, case: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {KEY_A}", **(case.headers or {})}
    headers = {
        k: v for k, v in headers.items() if isinstance(v, str) and SENDABLE.match(v) and k.lower() not in FRAMING
    }
    body = case.body
    content = None if body is schemathesis.core.NOT_SET else body if isinstance(body, bytes) else json.dumps(body)
    if content is not None:
        headers["Content-Type"] = "application/json"
    return http.request(case.method, case.formatted_path, params=case.query, headers=headers, content=content)


def _fuzz_operation(http: httpx.Client, operation: Any, mode: GenerationMode, failures: list[str]) -> int:
    """Run FUZZ_EXAMPLES cases of one operation; failures are collected, not raised (all are seen)."""
    cases = 0

    @settings(
        max_examples=FUZZ_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def fuzz(case: Any) -> None:
        nonlocal cases
        cases += 1
        response = _send(http, case)
        try:
            assert response.status_code < 500 or response.status_code == 503, response.text[:300]
            check_error_shape(response)
        except AssertionError as exc:
            failures.append(f"{case.method} {case.formatted_path} {mode.value}: {exc}")

    fuzz()
    return cases


@pytest.mark.slow
def test_schemathesis_fuzz_of_the_openapi_surface(fake_stack: FakeStack) -> None:
    with httpx.Client(base_url=fake_stack.gateway.url) as client:
        spec = client.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(documented_spec(spec))
    failures: list[str] = []
    cases = 0
    with httpx.Client(base_url=fake_stack.gateway.url, timeout=60) as http:
        for result in schema.get_all_operations():
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                cases += _fuzz_operation(http, result.ok(), mode, failures)
    print(f"schemathesis: {cases} cases, {len(failures)} failures")
    assert cases >= 9 * FUZZ_EXAMPLES  # every operation got real traffic
    assert not failures, failures[:5]


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("path", POST_ROUTES)
def test_hostile_bodies_on_every_post_route(fake_stack_factory: Callable[..., FakeStack], path: str) -> None:
    stack = fake_stack_factory()
    hostile: list[tuple[bytes, int]] = [
        (b"\xff\xfe\xfa not utf-8", 400),
        (b'{"request": "caf\xe9"}', 400),  # latin-1 byte inside a JSON string
        (_nested(100_000).encode(), 400),  # nests past the parser's recursion limit
        (('{"a":' * 50_000 + "1" + "}" * 50_000).encode(), 400),
        (b"x" * (stack.gateway.settings.gateway.max_body_bytes + 1), 413),
        (b"", 400),
        (b"null", 400),
        (b"[1, 2, 3]", 400),
        (b'{"request": "x", "model": "m", "messages": "\\ud800"}', 400),  # lone surrogate
        (json.dumps({"request": "x" * 5000, "model": "y" * 5000, "messages": []}).encode(), 400),
    ]
    with stack.gateway.client() as client:
        for body, status in hostile:
            response = client.post(path, content=body, headers={"Content-Type": "application/json"})
            check_error_shape(response)
            assert response.status_code == status, (body[:40], response.text[:200])


CHAT = {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


@pytest.mark.parametrize(
    "body",
    [
        {**CHAT, "cache_salt": "mine"},
        {**CHAT, "cache_salt": ""},
        {**CHAT, "cache_salt": None},
        {**CHAT, "extra_body": {"cache_salt": "mine"}},
        {**CHAT, "messages": [{"role": "user", "content": "hi", "cache_salt": "mine"}]},
        {**CHAT, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}, "cache_salt": "m"}}},
        {**CHAT, "stream_options": {"include_usage": True, "cache_salt": "mine"}},
        {**CHAT, "vllm_xargs": {"cache_salt": "mine"}},
        {**CHAT, "kv_transfer_params": {"cache_salt": "mine"}},
        {**CHAT, "model": "planner", "cache_salt": "mine"},
    ],
    ids=["top", "empty", "null", "extra_body", "in-message", "in-format", "in-stream-options", "vllm_xargs",
         "kv_transfer", "planner-model"],
)  # fmt: skip
def test_a_client_cache_salt_never_reaches_the_engine(fake_stack: FakeStack, body: dict[str, Any]) -> None:
    with fake_stack.gateway.client() as client:
        response = client.post("/v1/chat/completions", json=body)
    check_error_shape(response)
    assert response.status_code in (200, 400), response.text
    expected_salt = None
    with fake_stack.gateway.client() as client:  # the tenant's own server-side salt, for comparison
        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200
        expected_salt = fake_stack.behaviour.received[-1]["cache_salt"]
    for forwarded in fake_stack.behaviour.received:
        assert forwarded["cache_salt"] == expected_salt  # only ever the server's
        assert "mine" not in json.dumps(forwarded) and "extra_body" not in forwarded


RUN_IDS = [
    "../../etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "run_00000000%00",
    "run_" + "f" * 41,
    "RUN_0123456789abcdef",
    "run_0123456789abcdef'--",
    "run_0123456789abcdeg",
    "%2e%2e",
]


def test_other_tenants_and_malformed_run_ids(fake_stack: FakeStack) -> None:
    with fake_stack.gateway.client(KEY_A) as alice, fake_stack.gateway.client(KEY_B) as bob:
        run_id = alice.post("/v1/runs", json={"request": REQUEST, "plan": TRIP, "wait": True}).json()["run_id"]
        tried = 0
        for method, suffix in (("GET", ""), ("GET", "/events"), ("POST", "/resume")):
            theirs = bob.request(method, f"/v1/runs/{run_id}{suffix}")
            check_error_shape(theirs)
            assert theirs.status_code == 404 and run_id not in theirs.json()["error"]["message"].replace(
                f"run {run_id!r} not found", ""
            )
            for bad in RUN_IDS:
                response = alice.request(method, f"/v1/runs/{bad}{suffix}")
                check_error_shape(response)
                assert response.status_code in (400, 404), (bad, response.status_code)
                tried += 1
        # an id of the same shape that does not exist answers exactly like another tenant's
        missing = bob.get("/v1/runs/run_0123456789abcdef0123")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "run_not_found"


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(
    value=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=30),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
        max_leaves=20,
    ),
    field=st.sampled_from(["messages", "model", "max_tokens", "response_format", "tools", "stop", "n", "logit_bias"]),
)
def test_random_json_in_chat_fields_is_never_a_500(value: Any, field: str) -> None:
    """Random JSON values in every chat field, through the gateway's own ASGI app (no upstream call
    is made for an invalid body; valid ones reach no engine and get a 503)."""
    response = _ASGI.post("/v1/chat/completions", json={**CHAT, field: value})
    check_error_shape(response)
    assert response.status_code in (200, 400, 404, 413, 503), response.text[:200]


def _asgi_client() -> Any:
    import tempfile
    from pathlib import Path

    from fastapi.testclient import TestClient
    from pydantic import SecretStr

    from serving.app import create_app
    from serving.settings import EngineSettings, Settings
    from tests.conftest import API_KEYS

    settings = Settings(
        home=Path(tempfile.mkdtemp(prefix="planstack-fuzz-")),
        api_keys=SecretStr(API_KEYS),
        engine=EngineSettings(port=1, connect_timeout_s=0.2),
    )
    app = create_app(settings, engine_model=FAKE_MODEL, model_dir=None)
    return TestClient(app, headers={"Authorization": f"Bearer {KEY_A}"}, raise_server_exceptions=False)


_ASGI = _asgi_client()

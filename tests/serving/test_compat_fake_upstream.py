"""Tool calling, Responses, completions and OpenAPI against a real gateway in front of the FAKE upstream
(marker `fake_upstream`): hostile tool schemas are refused before anything reaches the engine, invalid
arguments are re-asked once then a clear 422, unknown fields and client salts never pass."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import Response

from serving.settings import ToolCallSettings
from serving.toolcalls.decoder import drop_unset
from serving.toolcalls.schemas import ArgumentGrammar
from serving.toolcalls.validation import UnsafeSchemaError, argument_validator, check_pattern
from tests.conftest import FAKE_MODEL, KEY_A, FakeStack

pytestmark = pytest.mark.fake_upstream

PARAMS = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}
TOOL = {"type": "function", "function": {"name": "plan_trip", "description": "Plan a trip", "parameters": PARAMS}}
ASK = [{"role": "user", "content": "A trip to Rome"}]


def chat(stack: FakeStack, **body: Any) -> httpx.Response:
    with stack.gateway.client() as client:
        return client.post("/v1/chat/completions", json={"model": FAKE_MODEL, "messages": ASK, **body})


def tool_with(parameters: dict[str, Any], name: str = "hostile") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    return schema


HOSTILE: dict[str, list[dict[str, Any]]] = {
    "look-around": [tool_with({"type": "object", "properties": {"a": {"type": "string", "pattern": "^(?!x)(a+)+$"}}})],
    "over-long pattern": [tool_with({"type": "object", "properties": {"a": {"type": "string", "pattern": "a" * 1200}}})],
    "back-reference": [tool_with({"type": "object", "properties": {"a": {"type": "string", "pattern": r"(a)\1"}}})],
    "pattern property": [tool_with({"type": "object", "patternProperties": {r"^(x+)\1y$": {"type": "string"}}})],
    "recursive $ref": [tool_with({"type": "object", "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}},
                                  "properties": {"root": {"$ref": "#/$defs/n"}}})],
    "remote $ref": [tool_with({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s.json"}}})],
    "deep": [tool_with(nested(20))],
    "huge": [tool_with({"type": "object", "properties": {f"a{i}": {"type": "string", "enum": [f"value-number-{j}" for j in range(200)]} for i in range(30)}})],
    "invalid schema": [tool_with({"type": "object", "properties": {"a": {"type": 12}}})],
    "thousands of tools": [tool_with({"type": "object", "properties": {}}, name=f"t{i}") for i in range(2000)],
    "not a function": [{"type": "web_search"}],
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_tool_schemas_are_refused_before_the_engine(fake_stack: FakeStack, case: str) -> None:
    reply = chat(fake_stack, tools=HOSTILE[case], tool_choice="required")
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"].startswith("tools")
    assert fake_stack.behaviour.received == []  # nothing reached the engine
    assert httpx.get(f"{fake_stack.gateway.url}/health", timeout=5).status_code == 200


def test_named_tool_call_shape_and_what_the_engine_sees(fake_stack: FakeStack) -> None:
    fake_stack.behaviour.replies = ['{"city": "Rome", "days": null}']
    reply = chat(fake_stack, tools=[TOOL], tool_choice={"type": "function", "function": {"name": "plan_trip"}}, unknown=1)
    assert reply.status_code == 200, reply.text
    choice = reply.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    call = choice["message"]["tool_calls"][0]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert json.loads(call["function"]["arguments"]) == {"city": "Rome"}  # the optional null is dropped
    [sent] = fake_stack.behaviour.received
    assert "tools" not in sent and "tool_choice" not in sent and "unknown" not in sent
    assert len(sent["cache_salt"]) == 64
    schema = sent["structured_outputs"]["json"]
    assert schema["required"] == ["city", "days"] and schema["additionalProperties"] is False
    assert "plan_trip" in sent["messages"][0]["content"]  # the tool list, rendered from the template


def test_invalid_arguments_are_re_asked_once_then_a_422(fake_stack: FakeStack) -> None:
    fake_stack.behaviour.replies = ['{"tools": ["plan_trip"]}', '{"days": 3}', '{"days": "x"}']
    reply = chat(fake_stack, tools=[TOOL], tool_choice="required", parallel_tool_calls=False)
    assert reply.status_code == 422
    assert reply.json()["error"]["code"] == "tool_call_invalid"
    assert len(fake_stack.behaviour.received) == 3  # selection, arguments, one re-ask
    assert "invalid" in fake_stack.behaviour.received[-1]["messages"][-1]["content"]


def test_auto_with_an_empty_selection_answers_in_text(fake_stack: FakeStack) -> None:
    fake_stack.behaviour.replies = ['{"tools": []}']
    reply = chat(fake_stack, tools=[TOOL], tool_choice="auto")
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"] == fake_stack.behaviour.reply
    assert "structured_outputs" not in fake_stack.behaviour.received[-1]


def test_tool_history_is_rendered_as_text(fake_stack: FakeStack) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "plan_trip", "arguments": '{"city": "Rome"}'}}
    messages = [*ASK, {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "content": "booked"}]  # fmt: skip
    with fake_stack.gateway.client() as client:
        reply = client.post("/v1/chat/completions", json={"model": FAKE_MODEL, "messages": messages})
    assert reply.status_code == 200
    sent = fake_stack.behaviour.received[-1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert "plan_trip" in sent[1]["content"] and sent[2]["content"] == "Result of plan_trip: booked"


def test_prompt_limit_counts_tools_and_tool_calls(fake_stack_factory: Any) -> None:
    from serving.settings import GatewaySettings

    stack = fake_stack_factory(gateway=GatewaySettings(max_prompt_chars=300))
    big = tool_with({"type": "object", "properties": {"a": {"type": "string", "description": "x" * 400}}})
    reply = chat(stack, tools=[big], tool_choice="none")
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "context_length_exceeded"
    assert stack.behaviour.received == []


def test_responses_plain_and_streamed_parse_with_the_sdk(fake_stack: FakeStack) -> None:
    client = openai.OpenAI(base_url=fake_stack.gateway.url + "/v1", api_key=KEY_A, max_retries=0)
    response = client.responses.create(model=FAKE_MODEL, input="hi", metadata={"app": "x"})
    assert isinstance(response, Response) and response.output_text == fake_stack.behaviour.reply
    Response.model_validate(response.model_dump(by_alias=True))
    with client.responses.stream(model=FAKE_MODEL, input="hi") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert final.output_text.strip() == fake_stack.behaviour.reply
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model=FAKE_MODEL, input="hi", previous_response_id="resp_1")


def test_completions_relayed_with_the_same_protections(fake_stack: FakeStack) -> None:
    client = openai.OpenAI(base_url=fake_stack.gateway.url + "/v1", api_key=KEY_A, max_retries=0)
    completion = client.completions.create(model=FAKE_MODEL, prompt="Hello", max_tokens=4, extra_body={"guided_json": {}})
    assert completion.choices[0].text == fake_stack.behaviour.reply
    [sent] = fake_stack.behaviour.received
    assert "guided_json" not in sent and len(sent["cache_salt"]) == 64 and sent["prompt"] == "Hello"
    for bad in ({"extra_body": {"cache_salt": "x"}}, {"max_tokens": 10**6}):
        with pytest.raises(openai.BadRequestError):
            client.completions.create(model=FAKE_MODEL, prompt="Hello", **bad)  # type: ignore[arg-type]
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="other", prompt="Hello")


def test_embedding_limits(fake_stack_factory: Any) -> None:
    from serving.settings import EmbeddingSettings

    stack = fake_stack_factory(embeddings=EmbeddingSettings(max_inputs=2, max_input_chars=10))
    with stack.gateway.client() as client:
        for body, param in (
            ({"input": ["a", "b", "c"]}, "input"),
            ({"input": "x" * 11}, "input[0]"),
            ({"input": [""]}, "input[0]"),
            ({"input": "a", "encoding_format": "int8"}, "encoding_format"),
        ):
            reply = client.post("/v1/embeddings", json={"model": "all-minilm-l6-v2", **body})
            assert reply.status_code == 400 and reply.json()["error"]["param"] == param
        assert client.post("/v1/embeddings", json={"model": "nope", "input": "a"}).status_code == 404


def test_openapi_documents_bodies_and_errors(fake_stack: FakeStack) -> None:
    spec = httpx.get(f"{fake_stack.gateway.url}/openapi.json", timeout=10).json()
    for path in ("/v1/chat/completions", "/v1/responses", "/v1/completions", "/v1/embeddings", "/v1/plans", "/v1/runs"):
        operation = spec["paths"][path]["post"]
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        assert "model" in schema["properties"] or "request" in schema["properties"]
        assert "$ref" not in json.dumps(schema)
        assert {"400", "401", "429"} <= set(operation["responses"])
    for path, ops in spec["paths"].items():
        for operation in ops.values():
            assert any(code != "200" for code in operation["responses"]), path
    assert "ErrorResponse" in spec["components"]["schemas"]


# ---- units of the toolcalls package ---------------------------------------------------------------
@pytest.mark.parametrize(
    "pattern", [r"^[a-z]{2,8}$", r"^\d{4}-\d{2}-\d{2}$", r"^(\+|-)?\d+$", r"^(a+)+$", r"^(a|a)*$", r"(\w+\s?)*$"]
)
def test_patterns_re2_takes_are_accepted_even_nested_repeats(pattern: str) -> None:
    check_pattern(pattern)  # RE2 matches them in linear time


@pytest.mark.parametrize("pattern", [r"(?=a)", r"(a)\1", "(", "a" * 1200, 7])
def test_patterns_re2_cannot_take_are_refused(pattern: object) -> None:
    with pytest.raises(UnsafeSchemaError):
        check_pattern(pattern)


@pytest.mark.timeout(60)  # with Python's re this value takes hours: the test would time out
def test_a_nested_repeat_is_matched_in_linear_time_by_the_argument_validator() -> None:
    check = argument_validator({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|a)*$"}}})
    assert check({"s": "a" * 5000 + "!"}) and check({"s": "aaaa"}) == []


def test_argument_validator_reports_problems() -> None:
    check = argument_validator({**PARAMS, "properties": {**PARAMS["properties"], "code": {"type": "string", "pattern": "^[A-Z]{3}$"}}})
    assert check({"city": "Rome", "code": "ABC"}) == []
    assert check({"code": "abc"}) and any("code" in problem for problem in check({"city": "Rome", "code": "abc"}))


def test_decoding_schema_is_bounded_and_its_max_tokens_covers_it() -> None:
    grammar = ArgumentGrammar(ToolCallSettings())
    schema = grammar.arguments_schema(
        {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer", "minimum": 1, "maximum": 5},
                                          "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["q"]}  # fmt: skip
    )
    assert schema["properties"]["n"] == {"anyOf": [{"enum": [1, 2, 3, 4, 5]}, {"type": "null"}]}
    assert "maxLength" not in json.dumps(schema) and schema["properties"]["tags"]["anyOf"][0]["maxItems"] == 4
    worst = grammar.worst_case_chars(schema)
    assert worst is not None and grammar.max_tokens(schema) >= worst
    longest = {"q": "x" * 32, "n": 5, "tags": ["y" * 32] * 4}
    assert len(json.dumps(longest)) <= worst
    assert drop_unset({"q": "a", "n": None, "tags": None}, {"properties": {"q": {}, "n": {}, "tags": {}}, "required": ["q"]}) == {"q": "a"}

"""The OpenAI surface internal apps use, against the REAL engine (marker `engine`) with the openai SDK:
tool calls (required, named, auto, streamed, a tool-result follow-up), the Responses API (plain,
streamed, function calls), legacy completions and embeddings. The 135M model is weak: the tests
assert structure and validity (names offered, arguments valid against the tool schema), and the
semantic choice only where one tool fits."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import jsonschema
import numpy as np
import openai
import pytest
from openai.types.responses import Response, ResponseFunctionToolCall, ResponseOutputMessage

from tests.conftest import RunningGateway

pytestmark = pytest.mark.engine

WEATHER_PARAMS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
}
TIME_PARAMS = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": WEATHER_PARAMS}}
TIME = {"type": "function", "function": {"name": "get_time", "description": "Current time in a timezone", "parameters": TIME_PARAMS}}
SCHEMAS = {"get_weather": WEATHER_PARAMS, "get_time": TIME_PARAMS}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def sdk(gateway: RunningGateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key="key-tenant-a-000", max_retries=0, timeout=300)


def assert_valid_calls(calls: list[tuple[str, str]]) -> None:
    """Each (name, arguments JSON) names an offered tool and its arguments validate against its schema."""
    assert calls
    for name, arguments in calls:
        assert name in SCHEMAS
        jsonschema.validate(json.loads(arguments), SCHEMAS[name])


@pytest.fixture
def client(gateway_factory: Callable[..., RunningGateway]) -> openai.OpenAI:
    return sdk(gateway_factory())


def test_required_tool_call(client: openai.OpenAI, engine_model: str) -> None:
    reply = client.chat.completions.create(model=engine_model, messages=ASK, tools=[WEATHER, TIME], tool_choice="required")
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    calls = choice.message.tool_calls or []
    assert all(call.type == "function" and call.id.startswith("call_") for call in calls)
    assert_valid_calls([(call.function.name, call.function.arguments) for call in calls])
    assert len({call.id for call in calls}) == len(calls)
    assert reply.usage is not None and reply.usage.completion_tokens > 0


def test_named_tool_call_with_parallel_off(client: openai.OpenAI, engine_model: str) -> None:
    reply = client.chat.completions.create(
        model=engine_model,
        messages=ASK,
        tools=[WEATHER, TIME],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        parallel_tool_calls=False,
    )
    calls = reply.choices[0].message.tool_calls or []
    assert [call.function.name for call in calls] == ["get_weather"]
    assert json.loads(calls[0].function.arguments)["city"] == "Paris"  # the only city in the request
    assert_valid_calls([(calls[0].function.name, calls[0].function.arguments)])


def test_auto_answers_or_calls_validly(client: openai.OpenAI, engine_model: str) -> None:
    reply = client.chat.completions.create(
        model=engine_model, messages=ASK, tools=[WEATHER, TIME], tool_choice="auto", max_tokens=24
    )
    choice = reply.choices[0]
    if choice.finish_reason == "tool_calls":
        assert_valid_calls([(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []])
    else:
        assert choice.message.tool_calls is None and choice.message.content


def test_streamed_tool_call_deltas(client: openai.OpenAI, engine_model: str) -> None:
    stream = client.chat.completions.create(
        model=engine_model,
        messages=ASK,
        tools=[WEATHER],
        tool_choice="required",
        stream=True,
        stream_options={"include_usage": True},
    )
    calls: dict[int, dict[str, str]] = {}
    finish, usage = None, None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                if delta.id:
                    call["id"] = delta.id
                if delta.function and delta.function.name:
                    call["name"] = delta.function.name
                if delta.function and delta.function.arguments:
                    call["arguments"] += delta.function.arguments
    assert finish == "tool_calls" and usage is not None and usage.total_tokens > 0
    assert all(call["id"].startswith("call_") for call in calls.values())
    assert_valid_calls([(call["name"], call["arguments"]) for call in calls.values()])


def test_tool_result_follow_up(client: openai.OpenAI, engine_model: str) -> None:
    first = client.chat.completions.create(
        model=engine_model, messages=ASK, tools=[WEATHER], tool_choice="required", parallel_tool_calls=False
    )
    call = (first.choices[0].message.tool_calls or [])[0]
    history = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump(exclude_none=True)]},
        {"role": "tool", "tool_call_id": call.id, "content": '{"temperature_c": 21, "sky": "sunny"}'},
    ]
    answer = client.chat.completions.create(model=engine_model, messages=history, max_tokens=24)  # no tools: text
    assert answer.choices[0].message.content and answer.choices[0].message.tool_calls is None
    again = client.chat.completions.create(model=engine_model, messages=history, tools=[WEATHER], tool_choice="auto")
    choice = again.choices[0]
    if choice.finish_reason == "tool_calls":
        assert_valid_calls([(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []])
    else:
        assert choice.message.content


def test_hostile_tool_schema_is_refused_and_the_engine_stays_healthy(
    gateway_factory: Callable[..., RunningGateway], engine_model: str, engine_url: str
) -> None:
    gateway = gateway_factory()
    # a back-reference: RE2 cannot match it in linear time (nested repeats such as ^(a|a)*$ are fine for RE2)
    hostile = {"type": "object", "properties": {"code": {"type": "string", "pattern": r"^(a+)\1$"}}, "required": ["code"]}
    tool = {"type": "function", "function": {"name": "check", "parameters": hostile}}
    with pytest.raises(openai.BadRequestError) as caught:
        sdk(gateway).chat.completions.create(model=engine_model, messages=ASK, tools=[tool], tool_choice="required")
    assert caught.value.status_code == 400 and "pattern" in str(caught.value)
    assert httpx.get(f"{engine_url}/health", timeout=5).status_code == 200
    assert httpx.get(f"{gateway.url}/health", timeout=5).json()["engine"] == "ok"


# ---- Responses API --------------------------------------------------------------------------------
def test_responses_create_plain(client: openai.OpenAI, engine_model: str) -> None:
    response = client.responses.create(model=engine_model, input="Say hello.", instructions="Be brief.", max_output_tokens=12)
    assert isinstance(response, Response) and response.id.startswith("resp_")
    assert response.status in ("completed", "incomplete")
    message = response.output[0]
    assert isinstance(message, ResponseOutputMessage) and response.output_text
    assert response.usage is not None and 0 < response.usage.output_tokens <= 12
    Response.model_validate(response.model_dump(by_alias=True))  # strict re-validation of the SDK's type


def test_responses_streamed(client: openai.OpenAI, engine_model: str) -> None:
    events = list(client.responses.create(model=engine_model, input="Count to three.", max_output_tokens=12, stream=True))
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] in ("response.completed", "response.incomplete")
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    done = next(event for event in events if event.type == "response.output_text.done")
    assert deltas and done.text == deltas
    final = events[-1].response  # type: ignore[union-attr]
    assert isinstance(final, Response) and final.output_text == deltas


def test_responses_function_call_streamed_to_a_final_response(client: openai.OpenAI, engine_model: str) -> None:
    tool = {"type": "function", "name": "get_weather", "description": "Current weather in a city", "parameters": WEATHER_PARAMS}
    with client.responses.stream(model=engine_model, input="Weather in Rome?", tools=[tool], tool_choice="required") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert "response.function_call_arguments.delta" in kinds and kinds[-1] == "response.completed"
    calls = [item for item in final.output if isinstance(item, ResponseFunctionToolCall)]
    assert calls and all(call.call_id.startswith("call_") for call in calls)
    assert_valid_calls([(call.name, call.arguments) for call in calls])
    follow_up = client.responses.create(
        model=engine_model,
        input=[
            {"role": "user", "content": "Weather in Rome?"},
            {"type": "function_call", "call_id": calls[0].call_id, "name": calls[0].name, "arguments": calls[0].arguments},
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": '{"sky": "clear"}'},
        ],
        max_output_tokens=16,
    )
    assert follow_up.output_text


def test_responses_text_format_json_schema(client: openai.OpenAI, engine_model: str) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]}}, "required": ["city"], "additionalProperties": False}
    response = client.responses.create(
        model=engine_model,
        input="Which city is the capital of Italy? Answer as JSON.",
        text={"format": {"type": "json_schema", "name": "city", "schema": schema}},
        max_output_tokens=20,
    )
    jsonschema.validate(json.loads(response.output_text), schema)


# ---- completions and embeddings -------------------------------------------------------------------
def test_legacy_completion(client: openai.OpenAI, engine_model: str) -> None:
    completion = client.completions.create(model=engine_model, prompt="The capital of France is", max_tokens=5, temperature=0)
    assert completion.object == "text_completion" and completion.choices[0].text
    assert completion.usage is not None and completion.usage.completion_tokens <= 5
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model=engine_model, prompt="x", max_tokens=5, extra_body={"cache_salt": "mine"})


def test_embeddings_float_and_base64(client: openai.OpenAI) -> None:
    assert "all-minilm-l6-v2" in [model.id for model in client.models.list().data]
    texts = ["a flight to Paris", "a plane to Paris", "a recipe for soup"]
    by_sdk = client.embeddings.create(model="all-minilm-l6-v2", input=texts)  # the SDK asks for base64
    floats = client.embeddings.create(model="all-minilm-l6-v2", input=texts, encoding_format="float")
    a = np.array([item.embedding for item in by_sdk.data])
    b = np.array([item.embedding for item in floats.data])
    assert a.shape == (3, 384) and np.allclose(a, b, atol=1e-6)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4)
    assert a[0] @ a[1] > a[0] @ a[2]  # nearer meaning, nearer vectors
    assert by_sdk.usage.prompt_tokens > 0
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="all-minilm-l6-v2", input="x", dimensions=128)

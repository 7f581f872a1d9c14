"""LangChain (`langchain-openai`) and instructor against the gateway in front of the REAL engine
(marker `engine`): tool binding, structured output by function calling, a two-step tool loop,
instructor's TOOLS and JSON_SCHEMA modes. Each asserts the parsed result."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Literal

import instructor
import jsonschema
import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from tests.conftest import KEY_A, RunningGateway

pytestmark = pytest.mark.engine


class Trip(BaseModel):
    """A planned trip."""

    city: Literal["Paris", "Rome", "Tokyo"]
    days: int = Field(ge=1, le=14)


@tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return json.dumps({"city": city, "sky": "sunny", "temperature_c": 21})


@tool
def get_time(timezone: str) -> str:
    """Current time in a timezone."""
    return json.dumps({"timezone": timezone, "time": "10:00"})


SCHEMAS = {
    "get_weather": get_weather.tool_call_schema.model_json_schema(),
    "get_time": get_time.tool_call_schema.model_json_schema(),
}
TRIP_REQUEST = "Plan a three day trip to Rome. Give the city and the number of days."


@pytest.fixture
def gateway(gateway_factory: Callable[..., RunningGateway]) -> RunningGateway:
    return gateway_factory()


def chat_model(gateway: RunningGateway, model: str) -> ChatOpenAI:
    return ChatOpenAI(base_url=gateway.url + "/v1", api_key=KEY_A, model=model, temperature=0, max_retries=0, timeout=300)  # type: ignore[arg-type]


def assert_valid(calls: list[dict[str, object]]) -> None:
    assert calls
    for call in calls:
        assert call["name"] in SCHEMAS and str(call["id"]).startswith("call_")
        jsonschema.validate(call["args"], SCHEMAS[str(call["name"])])


def test_langchain_bind_tools_any(gateway: RunningGateway, engine_model: str) -> None:
    llm = chat_model(gateway, engine_model).bind_tools([get_weather, get_time], tool_choice="any")
    message = llm.invoke("What is the weather in Paris?")
    assert isinstance(message, AIMessage)
    assert_valid(message.tool_calls)  # type: ignore[arg-type]


def test_langchain_structured_output_by_function_calling(gateway: RunningGateway, engine_model: str) -> None:
    trip = chat_model(gateway, engine_model).with_structured_output(Trip, method="function_calling").invoke(TRIP_REQUEST)
    assert isinstance(trip, Trip) and trip.city in ("Paris", "Rome", "Tokyo") and 1 <= trip.days <= 14


def test_langchain_two_step_tool_loop(gateway: RunningGateway, engine_model: str) -> None:
    tools = {"get_weather": get_weather, "get_time": get_time}
    llm = chat_model(gateway, engine_model).bind_tools(list(tools.values()))
    messages: list[object] = [HumanMessage("What is the weather in Paris?")]
    first = chat_model(gateway, engine_model).bind_tools(list(tools.values()), tool_choice="any").invoke(messages)  # type: ignore[arg-type]
    assert isinstance(first, AIMessage)
    assert_valid(first.tool_calls)  # type: ignore[arg-type]
    messages.append(first)
    for call in first.tool_calls:
        messages.append(ToolMessage(tools[call["name"]].invoke(call["args"]), tool_call_id=call["id"]))
    second = llm.invoke(messages)  # type: ignore[arg-type]
    assert isinstance(second, AIMessage)
    if second.tool_calls:
        assert_valid(second.tool_calls)  # type: ignore[arg-type]
    else:
        assert isinstance(second.content, str) and second.content


def test_instructor_tools_mode(gateway: RunningGateway, engine_model: str) -> None:
    client = instructor.from_openai(
        openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY_A, max_retries=0, timeout=300), mode=instructor.Mode.TOOLS
    )
    trip = client.chat.completions.create(
        model=engine_model, response_model=Trip, messages=[{"role": "user", "content": TRIP_REQUEST}], max_retries=1
    )
    assert isinstance(trip, Trip) and 1 <= trip.days <= 14


def test_instructor_json_schema_mode(gateway: RunningGateway, engine_model: str) -> None:
    client = instructor.from_openai(
        openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY_A, max_retries=0, timeout=300),
        mode=instructor.Mode.JSON_SCHEMA,
    )
    trip = client.chat.completions.create(
        model=engine_model,
        response_model=Trip,
        messages=[{"role": "user", "content": TRIP_REQUEST}],
        max_tokens=40,
        max_retries=1,
    )
    assert isinstance(trip, Trip) and trip.city in ("Paris", "Rome", "Tokyo")

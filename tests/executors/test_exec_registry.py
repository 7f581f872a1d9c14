"""ToolRegistry: schemas derived from type hints, validation before the call, OpenAI format."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from exec_helpers import Echo, run
from pydantic import Field

from executors.errors import ToolArgumentError, ToolOutputError, UnknownToolError
from executors.registry import ToolRegistry


def build() -> tuple[ToolRegistry, list[dict[str, object]]]:
    registry = ToolRegistry()
    calls: list[dict[str, object]] = []

    @registry.tool(version="2", timeout_s=3, retries=5, concurrency_class="io", slow=True)
    async def find(
        city: Annotated[str, Field(description="City name.")],
        nights: Annotated[int, Field(ge=1, description="Nights to stay.")],
        mode: Literal["cheap", "best"] = "best",
        tags: list[str] | None = None,
    ) -> Echo:
        """Find something in a city."""
        calls.append({"city": city, "nights": nights, "mode": mode, "tags": tags})
        return Echo(label=city, value=nights, items=[])

    @registry.tool(name="lies", description="Returns the wrong type.")
    def liar(x: int) -> Echo:
        return {"label": 1}  # type: ignore[return-value,unused-ignore]

    return registry, calls


def test_schema_is_derived_from_type_hints() -> None:
    registry, _ = build()
    spec = registry.get("find")
    assert (spec.name, spec.version, spec.timeout_s, spec.retries, spec.concurrency_class, spec.slow) == (
        "find",
        "2",
        3,
        5,
        "io",
        True,
    )
    assert spec.description == "Find something in a city."
    schema = spec.args_schema
    assert schema["type"] == "object" and schema["required"] == ["city", "nights"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["city"] == {"type": "string", "description": "City name."}
    assert props["nights"]["minimum"] == 1 and props["nights"]["type"] == "integer"
    assert props["mode"]["enum"] == ["cheap", "best"] and props["mode"]["default"] == "best"
    assert "title" not in schema and "title" not in props["city"]
    assert spec.output_schema["required"] == ["label", "value", "items"]


def test_openai_tool_and_catalog() -> None:
    registry, _ = build()
    tool = registry.get("find").openai_tool()
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "find" and tool["function"]["parameters"]["required"] == ["city", "nights"]
    assert [spec.name for spec in registry.catalog()] == ["find", "lies"]
    assert [t["function"]["name"] for t in registry.openai_tools(["lies"])] == ["lies"]
    assert registry.get("lies").description == "Returns the wrong type."


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"city": "Hangzhou"}, "nights: Field required"),
        ({"city": "Hangzhou", "nights": 0}, "nights: Input should be greater than or equal to 1"),
        ({"city": "Hangzhou", "nights": 2, "mode": "luxury"}, "mode: Input should be 'cheap' or 'best'"),
        ({"city": "Hangzhou", "nights": 2, "rm": "-rf"}, "rm: Extra inputs are not permitted"),
        ({"city": ["x"], "nights": 2}, "city: Input should be a valid string"),
    ],
)
def test_bad_arguments_are_rejected_before_the_call(args: dict[str, object], problem: str) -> None:
    registry, calls = build()
    spec = registry.get("find")
    with pytest.raises(ToolArgumentError) as info:
        spec.validate_args(args)
    assert problem in info.value.message and info.value.retryable is False
    assert calls == []


def test_validated_call_and_output_checking() -> None:
    registry, calls = build()
    spec = registry.get("find")
    kwargs, normalised = spec.prepare_call({"city": "Hangzhou", "nights": "3"})
    assert kwargs == {"city": "Hangzhou", "nights": 3, "mode": "best", "tags": None}
    assert normalised == kwargs
    assert run(spec.invoke(kwargs)) == {"label": "Hangzhou", "value": 3, "items": []}
    assert len(calls) == 1
    liar = registry.get("lies")
    with pytest.raises(ToolOutputError):
        run(liar.invoke(liar.validate_args({"x": 1})))


def test_registration_errors() -> None:
    registry, _ = build()
    with pytest.raises(UnknownToolError):
        registry.get("missing")
    with pytest.raises(ValueError, match="already registered"):

        @registry.tool(name="find", description="dup")
        def other(x: int) -> Echo: ...

    with pytest.raises(ValueError, match="no type hint"):

        @registry.tool(description="untyped")
        def untyped(x) -> Echo: ...  # type: ignore[no-untyped-def,unused-ignore]

    with pytest.raises(ValueError, match="needs a description"):

        @registry.tool()
        def undocumented(x: int) -> Echo: ...

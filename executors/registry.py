"""Tool registry: `@registry.tool(...)` turns a typed function into a `ToolSpec`.

The argument schema is derived from the function's signature (a pydantic model is built from the
parameters; `Annotated[..., Field(description=...)]` documents an argument, `Literal[...]` becomes an
enum), the output schema from its return annotation. Arguments are validated against that model
before any call, so bad arguments never reach a tool. Async and sync functions are both supported;
sync ones run in a worker thread (a timeout abandons the thread's result but cannot stop the thread:
keep sync tools short, or make them async).

    registry = ToolRegistry()

    @registry.tool(version="2", timeout_s=5, retries=3)
    async def get_weather(city: Annotated[str, Field(description="City name")], date: str) -> Weather:
        \"\"\"Forecast for a city on a date.\"\"\"

`approval="required"` holds every call of the tool until a person approves it (executors.approvals);
the tool's OpenAI and planner rendering is the same either way.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

from executors.errors import ToolArgumentError, ToolOutputError, UnknownToolError

F = TypeVar("F", bound=Callable[..., Any])
Approval = Literal["none", "required"]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


class _ArgsBase(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class ToolSpec:
    """Everything the scheduler and the planner need to know about one tool."""

    name: str
    description: str
    version: str
    func: Callable[..., Any] = field(repr=False)
    args_model: type[BaseModel] = field(repr=False)
    output_adapter: TypeAdapter[Any] | None = field(repr=False)
    timeout_s: float | None = None
    retries: int | None = None  # max attempts for retryable errors; None = the scheduler's default
    concurrency_class: str = "default"
    slow: bool = False
    approval: Approval = "none"  # "required": each call waits for a person's approval
    source: str = "builtin"  # where the tool comes from, as metrics label it (a toolset's name, "model"...)

    @property
    def breaker_key(self) -> str:
        """What its circuit breaker is keyed on: the tool's name (a remote tool adds its toolset)."""
        return self.name

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func)

    @property
    def args_schema(self) -> dict[str, Any]:
        return _clean_schema(self.args_model.model_json_schema())

    @property
    def output_schema(self) -> dict[str, Any]:
        if self.output_adapter is None:
            return {}
        return _clean_schema(self.output_adapter.json_schema())

    def openai_tool(self) -> dict[str, Any]:
        """The tool in the OpenAI `tools=[...]` format."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.args_schema},
        }

    def validate_args(self, args: Any) -> dict[str, Any]:
        """Validated keyword arguments for the call; raises ToolArgumentError (non-retryable)."""
        model = self._validated(args)
        return {name: getattr(model, name) for name in type(model).model_fields}

    def prepare_call(self, args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """(keyword arguments for the call, the same arguments as normalised JSON, defaults filled)."""
        model = self._validated(args)
        kwargs = {name: getattr(model, name) for name in type(model).model_fields}
        return kwargs, model.model_dump(mode="json")

    def _validated(self, args: Any) -> BaseModel:
        if not isinstance(args, dict):
            raise ToolArgumentError(f"{self.name}: arguments must be a JSON object, got {type(args).__name__}")
        try:
            model = self.args_model.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
            )
            raise ToolArgumentError(f"{self.name}: invalid arguments: {problems}") from None
        return model

    def to_json_output(self, value: Any) -> Any:
        """The tool's return value as plain JSON, checked against the declared output type."""
        if self.output_adapter is None:
            adapter: TypeAdapter[Any] = TypeAdapter(Any)
            return adapter.dump_python(value, mode="json")
        try:
            validated = self.output_adapter.validate_python(value, from_attributes=True)
        except ValidationError as exc:
            raise ToolOutputError(f"{self.name}: output does not match its schema: {exc.errors()[0]['msg']}") from None
        return self.output_adapter.dump_python(validated, mode="json")

    async def invoke(self, validated_args: dict[str, Any]) -> Any:
        """Call the tool with already validated arguments; returns its JSON output."""
        if self.is_async:
            value = await self.func(**validated_args)
        else:
            value = await asyncio.to_thread(self.func, **validated_args)
        return self.to_json_output(value)


class ToolRegistry:
    """A set of tools, by name. Create one per application (or test); there is no global registry."""

    def __init__(self) -> None:
        self._specs: dict[str, ToolSpec] = {}

    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        version: str = "1",
        timeout_s: float | None = None,
        retries: int | None = None,
        concurrency_class: str = "default",
        slow: bool = False,
        approval: Approval = "none",
        source: str = "builtin",
    ) -> Callable[[F], F]:
        """Register the decorated function as a tool; the function itself is returned unchanged."""

        def register(func: F) -> F:
            self.add(
                build_spec(
                    func,
                    name=name,
                    description=description,
                    version=version,
                    timeout_s=timeout_s,
                    retries=retries,
                    concurrency_class=concurrency_class,
                    slow=slow,
                    approval=approval,
                    source=source,
                )
            )
            return func

        return register

    def add(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} is already registered")
        self._specs[spec.name] = spec

    def get(self, name: str) -> ToolSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise UnknownToolError(f"unknown tool {name!r}", hint=f"known: {', '.join(sorted(self._specs))}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def names(self) -> list[str]:
        return sorted(self._specs)

    def catalog(self) -> list[ToolSpec]:
        return [self._specs[name] for name in sorted(self._specs)]

    def openai_tools(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        selected = self.names() if names is None else list(names)
        return [self.get(name).openai_tool() for name in selected]


def build_spec(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    version: str = "1",
    timeout_s: float | None = None,
    retries: int | None = None,
    concurrency_class: str = "default",
    slow: bool = False,
    approval: Approval = "none",
    source: str = "builtin",
) -> ToolSpec:
    """A ToolSpec from a typed function (see the module docstring)."""
    tool_name = name or func.__name__
    if not tool_name or not set(tool_name) <= _NAME_CHARS or len(tool_name) > 64:
        raise ValueError(f"tool name {tool_name!r}: use lower-case letters, digits and '_' (≤ 64)")
    if retries is not None and retries < 1:
        raise ValueError("retries is the maximum number of attempts; it must be ≥ 1")
    if timeout_s is not None and timeout_s <= 0:
        raise ValueError("timeout_s must be > 0")
    if approval not in ("none", "required"):
        raise ValueError("approval must be 'none' or 'required'")
    doc = description if description is not None else inspect.getdoc(func)
    if not doc:
        raise ValueError(f"tool {tool_name!r} needs a description (argument or docstring)")
    try:
        hints = get_type_hints(func, include_extras=True)
    except NameError as exc:
        problem = f"tool {tool_name!r}: cannot resolve its type hints ({exc}); define the types at module level"
        raise ValueError(problem) from exc
    fields: dict[str, Any] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ValueError(f"tool {tool_name!r}: *args/**kwargs cannot be described by a schema")
        if param.name not in hints:
            raise ValueError(f"tool {tool_name!r}: argument {param.name!r} has no type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
    model_name = "".join(part.capitalize() for part in tool_name.split("_")) + "Args"
    args_model = create_model(model_name, __base__=_ArgsBase, **fields)
    returns = hints.get("return")
    output_adapter = None if returns is None or returns is type(None) else TypeAdapter(returns)
    return ToolSpec(
        name=tool_name,
        description=doc.strip(),
        version=version,
        func=func,
        args_model=args_model,
        output_adapter=output_adapter,
        timeout_s=timeout_s,
        retries=retries,
        concurrency_class=concurrency_class,
        slow=slow,
        approval=approval,
        source=source,
    )


def _clean_schema(schema: Any, *, in_properties: bool = False) -> Any:
    """Drop pydantic's generated `title`s (noise in a prompt); property names are kept as they are."""
    if isinstance(schema, dict):
        cleaned: dict[str, Any] = {}
        for key, value in schema.items():
            if not in_properties and key == "title" and isinstance(value, str):
                continue
            nested_props = not in_properties and key in ("properties", "$defs", "definitions")
            cleaned[key] = _clean_schema(value, in_properties=nested_props)
        return cleaned
    if isinstance(schema, list):
        return [_clean_schema(item) for item in schema]
    return schema

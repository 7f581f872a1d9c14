"""Public request models of the OpenAI-compatible API.

Public models tolerate unknown fields (OpenAI clients send extras) but never forward them: the
extras are logged and dropped, and only the fields named here reach the engine, so a client cannot
smuggle engine-level options (`cache_salt`, raw grammars) past the gateway's checks.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from contract.plan import count_first

MAX_TOOLS = 128
MAX_MESSAGES = 4096  # a hard cap above any sensible gateway.max_messages (checked after parsing)
MAX_INPUTS = 4096  # embeddings.max_inputs is at most this
MAX_PROMPT_ITEMS = 65_536  # texts or token ids of a legacy completion


def at_most(limit: int) -> BeforeValidator:
    """A list refused as soon as it is longer than `limit`, before any of its items is validated (pydantic
    checks `max_length` after validating them all, with one error per bad item: 250,000 of them for a
    list of zeros)."""
    return BeforeValidator(lambda value: count_first(value, limit))


class _Public(BaseModel):
    model_config = ConfigDict(extra="allow")

    def extras(self) -> list[str]:
        return sorted((self.model_extra or {}).keys())

    @model_validator(mode="after")
    def _forget_extra_values(self) -> Any:
        """Only the names of unknown fields are kept (to log them, and to refuse a client `cache_salt`):
        their values are never used, so a megabyte of them is not carried along (nor pickled back from
        a door worker)."""
        if self.__pydantic_extra__:
            self.__pydantic_extra__ = dict.fromkeys(self.__pydantic_extra__)
        return self

    @model_serializer(mode="wrap")
    def _declared_fields_only(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Unknown fields are never serialised, at any depth (e.g. a `cache_salt` inside a message)."""
        data = handler(self)
        if isinstance(data, dict):
            for key in self.model_extra or {}:
                data.pop(key, None)
        return data


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def compact_length(value: Any, limit: int | None = None) -> int:
    """`len(_compact(value))`, counted iteratively and only up to just past `limit` (when given): a
    client's megabyte of tool definitions is not serialised to learn that it is over a 32k limit."""
    if limit is None:
        return len(_compact(value))
    total = 0
    stack = [value]
    while stack and total <= limit:
        node = stack.pop()
        if isinstance(node, dict):
            total += 1 + max(1, len(node))  # braces and commas
            for key, child in node.items():
                total += len(_compact(str(key))) + 1
                stack.append(child)
                if total > limit:
                    break
        elif isinstance(node, list):
            total += 1 + max(1, len(node))
            stack.extend(node[: limit - total + 1])
        else:
            total += len(_compact(node))
    return total


def _at_most_8_stops(value: str | list[str] | None) -> str | list[str] | None:
    if isinstance(value, list) and len(value) > 8:
        raise ValueError("at most 8 stop sequences")
    return value


StopSequences = Annotated[str | list[str] | None, AfterValidator(_at_most_8_stops)]


class TextPart(_Public):
    type: Literal["text"]
    text: str


class ChatMessage(_Public):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    name: str | None = Field(None, max_length=64)
    tool_call_id: str | None = Field(None, max_length=128)
    tool_calls: Annotated[list[dict[str, JsonValue]] | None, at_most(64)] = Field(None, max_length=64)

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return ""

    def text_length(self) -> int:
        if isinstance(self.content, str):
            return len(self.content)
        if isinstance(self.content, list):
            return sum(len(part.text) for part in self.content)
        return 0

    def tool_calls_length(self, limit: int | None = None) -> int:
        return compact_length(self.tool_calls, limit) if self.tool_calls else 0


class JsonSchemaFormat(_Public):
    name: str = Field("response", max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    description: str | None = Field(None, max_length=1000)
    schema_: dict[str, JsonValue] = Field(alias="schema")
    strict: bool | None = None


class ResponseFormat(_Public):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class StreamOptions(_Public):
    include_usage: bool | None = None


class ChatCompletionRequest(_Public):
    """POST /v1/chat/completions."""

    model: str = Field(min_length=1, max_length=128)
    messages: Annotated[list[ChatMessage], at_most(MAX_MESSAGES)] = Field(min_length=1, max_length=MAX_MESSAGES)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = Field(None, ge=-1)
    min_p: float | None = Field(None, ge=0, le=1)
    n: int | None = Field(None, ge=1, le=8)
    stream: bool = False
    stream_options: StreamOptions | None = None
    stop: StopSequences = None
    seed: int | None = None
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    repetition_penalty: float | None = Field(None, gt=0, le=2)
    logit_bias: dict[str, float] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(None, ge=0, le=20)
    response_format: ResponseFormat | None = None
    tools: Annotated[list[dict[str, JsonValue]] | None, at_most(MAX_TOOLS)] = Field(None, max_length=MAX_TOOLS)
    tool_choice: str | dict[str, JsonValue] | None = None
    parallel_tool_calls: bool | None = None
    user: str | None = Field(None, max_length=256)
    toolsets: list[Annotated[str, Field(min_length=1, max_length=48)]] | None = Field(
        None, max_length=64, description="The `planner` model only: plan over these toolsets too (never sent on)."
    )

    def prompt_chars(self, *, include_tools: bool = True, limit: int | None = None) -> int:
        """The text the prompt is built from: messages, the `tools` definitions and assistant `tool_calls`
        (with `limit`, counted no further than just past it)."""
        tools = self.tools_chars(limit) if include_tools else 0
        return tools + sum(message.text_length() + message.tool_calls_length(limit) for message in self.messages)

    def tools_chars(self, limit: int | None = None) -> int:
        return compact_length(self.tools, limit) if self.tools else 0

    def uses_tools(self) -> bool:
        """Tools offered with a tool_choice that lets the model call them (the gateway decodes the calls)."""
        return bool(self.tools) and self.tool_choice != "none"

    def has_tool_history(self) -> bool:
        """Earlier tool calls or results in the conversation (rendered as text for the model)."""
        return any(message.role == "tool" or message.tool_calls for message in self.messages)

    def requested_tokens(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    def engine_body(self, *, model: str, cache_salt: str) -> dict[str, Any]:
        """The body sent to vLLM: declared fields only, the server-side salt added."""
        body = self.model_dump(
            exclude_none=True, by_alias=True, exclude=set(self.model_extra or {}) | {"model", "user", "toolsets"}
        )
        body["model"] = model
        body["cache_salt"] = cache_salt
        return body


PromptTokens = list[int]


class CompletionRequest(_Public):
    """POST /v1/completions (legacy text completions), relayed to the engine."""

    model: str = Field(min_length=1, max_length=128)
    prompt: Annotated[str | list[str] | PromptTokens | list[PromptTokens], at_most(MAX_PROMPT_ITEMS)] = Field(
        description="A text, a list of texts (at most 16), or token ids (a list, or up to 16 lists)."
    )
    suffix: str | None = Field(None, max_length=4000)
    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    n: int | None = Field(None, ge=1, le=8)
    stream: bool = False
    stream_options: StreamOptions | None = None
    logprobs: int | None = Field(None, ge=0, le=5)
    echo: bool | None = None
    stop: StopSequences = None
    seed: int | None = None
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    logit_bias: dict[str, float] | None = None
    user: str | None = Field(None, max_length=256)

    @field_validator("prompt")
    @classmethod
    def _bounded_prompts(cls, value: Any) -> Any:
        if isinstance(value, list) and value and isinstance(value[0], (str, list)) and len(value) > 16:
            raise ValueError("at most 16 prompts per request")
        if isinstance(value, list) and not value:
            raise ValueError("the prompt list is empty")
        return value

    def prompt_size(self) -> int:
        """Characters of text prompts, plus token ids counted one each (checked against max_prompt_chars)."""
        single = not isinstance(self.prompt, list) or isinstance(self.prompt[0], int)
        prompts: list[Any] = [self.prompt] if single else list(self.prompt)
        return sum(len(p) for p in prompts) + len(self.suffix or "")

    def engine_body(self, *, model: str, cache_salt: str) -> dict[str, Any]:
        body = self.model_dump(exclude_none=True, exclude=set(self.model_extra or {}) | {"model", "user"})
        body["model"] = model
        body["cache_salt"] = cache_salt
        return body


class EmbeddingRequest(_Public):
    """POST /v1/embeddings."""

    model: str = Field(min_length=1, max_length=128)
    input: Annotated[str | list[str], at_most(MAX_INPUTS)] = Field(
        description="A text or a list of texts (token-id inputs are not accepted)."
    )
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1, description="Only the model's own dimension is accepted.")
    user: str | None = Field(None, max_length=256)

    def texts(self) -> list[str]:
        return [self.input] if isinstance(self.input, str) else list(self.input)


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorResponse(BaseModel):
    """The body of every error answer (serving/errors.py: `error_body`)."""

    error: ErrorDetail

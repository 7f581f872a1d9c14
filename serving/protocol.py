"""Public request models of the OpenAI-compatible API.

Public models tolerate unknown fields (OpenAI clients send extras) but never forward them: the
extras are logged and dropped, and only the fields named here reach the engine, so a client cannot
smuggle engine-level options (`cache_salt`, raw grammars) past the gateway's checks.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)


class _Public(BaseModel):
    model_config = ConfigDict(extra="allow")

    def extras(self) -> list[str]:
        return sorted((self.model_extra or {}).keys())

    @model_serializer(mode="wrap")
    def _declared_fields_only(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Unknown fields are never serialised, at any depth (e.g. a `cache_salt` inside a message)."""
        data = handler(self)
        if isinstance(data, dict):
            for key in self.model_extra or {}:
                data.pop(key, None)
        return data


class TextPart(_Public):
    type: Literal["text"]
    text: str


class ChatMessage(_Public):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    name: str | None = Field(None, max_length=64)
    tool_call_id: str | None = Field(None, max_length=128)
    tool_calls: list[dict[str, JsonValue]] | None = None

    def text_length(self) -> int:
        if isinstance(self.content, str):
            return len(self.content)
        if isinstance(self.content, list):
            return sum(len(part.text) for part in self.content)
        return 0


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
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = Field(None, ge=-1)
    min_p: float | None = Field(None, ge=0, le=1)
    n: int | None = Field(None, ge=1, le=8)
    stream: bool = False
    stream_options: StreamOptions | None = None
    stop: str | list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    repetition_penalty: float | None = Field(None, gt=0, le=2)
    logit_bias: dict[str, float] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(None, ge=0, le=20)
    response_format: ResponseFormat | None = None
    tools: list[dict[str, JsonValue]] | None = Field(None, max_length=128)
    tool_choice: str | dict[str, JsonValue] | None = None
    parallel_tool_calls: bool | None = None
    user: str | None = Field(None, max_length=256)

    @field_validator("stop")
    @classmethod
    def _bounded_stop(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and len(value) > 8:
            raise ValueError("at most 8 stop sequences")
        return value

    def prompt_chars(self) -> int:
        return sum(message.text_length() for message in self.messages)

    def requested_tokens(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    def engine_body(self, *, model: str, cache_salt: str) -> dict[str, Any]:
        """The body sent to vLLM: declared fields only, the server-side salt added."""
        body = self.model_dump(
            exclude_none=True, by_alias=True, exclude=set(self.model_extra or {}) | {"model", "user"}
        )
        body["model"] = model
        body["cache_salt"] = cache_salt
        return body

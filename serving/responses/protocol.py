"""The Responses API request, and its translation into the chat request the gateway already serves."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue

from serving.dependencies import parse_model
from serving.errors import InvalidRequestError
from serving.protocol import MAX_MESSAGES, MAX_TOOLS, ChatCompletionRequest, _Public, at_most
from serving.toolcalls.choice import named_function

TEXT_PARTS = {"input_text", "output_text", "text"}


class TextFormat(_Public):
    type: Literal["text", "json_object", "json_schema"]
    name: str = Field("response", max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    description: str | None = Field(None, max_length=1000)
    schema_: dict[str, JsonValue] | None = Field(None, alias="schema")
    strict: bool | None = None


class TextConfig(_Public):
    format: TextFormat | None = None


class ResponsesRequest(_Public):
    """POST /v1/responses."""

    model: str = Field(min_length=1, max_length=128)
    input: Annotated[str | list[dict[str, JsonValue]], at_most(MAX_MESSAGES)] = Field(
        description="A text, or a list of input items."
    )
    instructions: str | None = Field(None, max_length=32_000)
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    stream: bool = False
    tools: Annotated[list[dict[str, JsonValue]] | None, at_most(MAX_TOOLS)] = Field(None, max_length=MAX_TOOLS)
    tool_choice: str | dict[str, JsonValue] | None = None
    parallel_tool_calls: bool | None = None
    text: TextConfig | None = None
    metadata: dict[str, str] | None = Field(None, max_length=16)
    store: bool | None = Field(None, description="Accepted; nothing is stored (previous_response_id is refused).")
    previous_response_id: str | None = Field(None, max_length=128)
    user: str | None = Field(None, max_length=256)

    def chat_tools(self) -> list[dict[str, Any]] | None:
        """Responses function tools (`{type, name, parameters}`) in the chat shape."""
        if not self.tools:
            return None
        converted = []
        for index, tool in enumerate(self.tools):
            if tool.get("type") != "function":
                raise InvalidRequestError(
                    f"only function tools are supported, not {str(tool.get('type'))[:40]!r}", param=f"tools[{index}]"
                )
            function = {k: tool[k] for k in ("name", "description", "parameters", "strict") if tool.get(k) is not None}
            converted.append({"type": "function", "function": function})
        return converted

    def chat_tool_choice(self) -> str | dict[str, Any] | None:
        if isinstance(self.tool_choice, dict):
            name = named_function(self.tool_choice)
            if name is None:
                raise InvalidRequestError(
                    'tool_choice must be "none", "auto", "required" or {"type": "function", "name": ...}',
                    param="tool_choice",
                )
            return {"type": "function", "function": {"name": name}}
        return self.tool_choice

    def to_chat(self) -> ChatCompletionRequest:
        if self.previous_response_id is not None:
            raise InvalidRequestError(
                "previous_response_id is not supported: responses are not stored; send the whole input",
                param="previous_response_id",
            )
        messages: list[dict[str, Any]] = []
        if self.instructions:
            messages.append({"role": "system", "content": self.instructions})
        messages.extend(_messages(self.input))
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_output_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "stream": self.stream,
            "tools": self.chat_tools(),
            "tool_choice": self.chat_tool_choice(),
            "parallel_tool_calls": self.parallel_tool_calls,
        }
        fmt = self.text.format if self.text is not None else None
        if fmt is not None and fmt.type == "json_schema":
            if fmt.schema_ is None:
                raise InvalidRequestError("text.format.schema is required for json_schema", param="text.format.schema")
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": fmt.name, "schema": fmt.schema_}}
        elif fmt is not None and fmt.type == "json_object":
            body["response_format"] = {"type": "json_object"}
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        return parse_model(ChatCompletionRequest, {k: v for k, v in body.items() if v is not None})


def _messages(items: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Input items → chat messages: messages, function calls (grouped into one assistant turn) and
    their outputs (tool messages)."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    messages: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role"), "content": _content(item.get("content"), index)})
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments")},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and last.get("tool_calls") is not None:
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _content(output, index)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
        else:
            message = f"input items of type {str(kind)[:40]!r} are not supported"
            raise InvalidRequestError(message, param=f"input[{index}]")
    return messages


def _content(content: Any, index: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            is_text = isinstance(part, dict) and part.get("type") in TEXT_PARTS and isinstance(part.get("text"), str)
            if not is_text:
                raise InvalidRequestError("only text content parts are supported", param=f"input[{index}].content")
            texts.append(part["text"])
        return "".join(texts)
    raise InvalidRequestError("content must be a string or a list of text parts", param=f"input[{index}].content")

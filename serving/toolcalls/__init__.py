"""OpenAI tool calling done by the gateway with its own guarded grammars (no engine-side tool parser).

- choice.py: `tools` / `tool_choice` / `parallel_tool_calls` → a `CallPolicy`;
- validation.py: `argument_validator(schema)`, the one factory that runs client schemas and patterns;
- schemas.py: the selection and per-tool argument grammars, shaped for outlines compile time;
- prompts.py: the tool list and tool history rendered from configs/prompts/toolcall_*.v1.txt;
- decoder.py: the staged decoding with the engine, validation and retries;
- shaping.py: OpenAI chat completion and streaming tool-call deltas;
- service.py: `ToolCallService`, what ChatService and the Responses API call.
"""

from serving.toolcalls.decoder import DecodedTurn, PreparedTools, ToolCall, ToolCallFailedError
from serving.toolcalls.service import ToolCallService

__all__ = ["DecodedTurn", "PreparedTools", "ToolCall", "ToolCallFailedError", "ToolCallService"]

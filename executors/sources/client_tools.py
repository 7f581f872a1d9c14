"""Tools a run hands to its caller: the calling app's own tools, and `ask_user`.

An app that starts a run may give OpenAI-format `tools` that it executes itself (the Assistants API's
`requires_action` pattern). Such a tool is a `PausingToolSpec`: the scheduler validates its
arguments like any other tool's, but never calls it; when its node is due the call is handed out
(the run pauses in `requires_action` once nothing else can proceed, `executors.tool_calls`) and the
node settles with the output (or error) the caller answers, or fails with `timeout` when nobody
answers within `answer_timeout_s`.

`ask_user(question)` is the same pause with a person at the other end: a plan can ask for a value
only a person can give (a missing date, a choice) instead of inventing it. Its answer is
`{"answer": "..."}`; the web UI shows the question with an answer box.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from executors.errors import ToolExecutionError
from executors.sources.remote_spec import RemoteToolSpec, SchemaCheckFactory, SchemaDefinedArgs
from executors.sources.tool_source import RemoteTool, ToolPolicy

PauseKind = Literal["client", "ask_user"]
ASK_USER = "ask_user"
MAX_QUESTION_CHARS = 1000
MAX_ANSWER_CHARS = 4000
ASK_USER_TOOL = RemoteTool(
    name=ASK_USER,
    remote_name=ASK_USER,
    description="Ask the user for a value the request does not give and no tool can look up (a missing date, "
    "an id only the user knows, a choice between options). The run waits for the answer.",
    parameters={
        "type": "object",
        "properties": {
            "question": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUESTION_CHARS,
                "description": "One short question, in the user's language.",
            }
        },
        "required": ["question"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "answer": {"type": "string", "maxLength": MAX_ANSWER_CHARS, "description": "What the user said."}
        },
        "required": ["answer"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True)
class PausingToolSpec(RemoteToolSpec):
    """A tool whose calls the run hands to its caller (see module doc); never invoked by the scheduler."""

    pause: PauseKind = "client"
    answer_timeout_s: float = 3600.0


def _never_called(**_: Any) -> Any:
    raise ToolExecutionError("a tool executed by the caller was invoked by the scheduler (a bug)")


def pausing_spec(
    tool: RemoteTool, *, pause: PauseKind, schema_check: SchemaCheckFactory, answer_timeout_s: float
) -> PausingToolSpec:
    """The spec of a tool the caller answers: arguments checked against `tool.parameters` (ValueError for an
    unusable schema), answers against `tool.output_schema` by whoever records them."""
    return PausingToolSpec(
        name=tool.name,
        description=tool.description,
        version=tool.digest[:12],
        func=_never_called,
        args_model=SchemaDefinedArgs,
        output_adapter=None,
        timeout_s=answer_timeout_s,
        retries=1,
        concurrency_class="caller",
        source="client" if pause == "client" else ASK_USER,
        remote=tool,
        source_id="client" if pause == "client" else ASK_USER,
        check_args=schema_check(tool.parameters),
        pause=pause,
        answer_timeout_s=answer_timeout_s,
    )


def client_tool(definition: dict[str, Any]) -> RemoteTool:
    """An OpenAI-format tool (`{"type": "function", "function": {...}}`, with planstack's optional
    `output_schema`) as the definition of a tool the calling app executes (ValueError when it is not one)."""
    function = definition.get("function") if definition.get("type", "function") == "function" else None
    if not isinstance(function, dict):
        raise ValueError("a tool is {'type': 'function', 'function': {'name', 'description', 'parameters'}}")
    name = function.get("name")
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    output = function.get("output_schema")
    return RemoteTool(
        name=name if isinstance(name, str) else "",
        remote_name=name if isinstance(name, str) and name else "?",
        description=str(function.get("description") or name or "")[:1000],
        parameters=parameters if isinstance(parameters, dict) else {},
        output_schema=output if isinstance(output, dict) else None,
        policy=ToolPolicy(approval="none", retryable=False),
    )

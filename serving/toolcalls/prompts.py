"""What the model reads in a tool-calling turn, from the template files configs/prompts/toolcall_*.

Chat templates of small models often have no `tool` role and no `tool_calls` field, so earlier
calls and their results are rendered as text: an assistant turn "I call NAME with {...}." and a user
turn "Result of NAME: ...". The tool list is appended to the first system message (or becomes one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from string import Template
from typing import Any

from planner.catalog import ToolCatalog, ToolDef
from serving.protocol import ChatMessage
from serving.settings import CONFIG_DIR

Message = dict[str, str]
TEMPLATES = (
    "system",
    "tool",
    "select",
    "rule_auto",
    "rule_required",
    "arguments",
    "repair",
    "history_call",
    "history_result",
)
MAX_DESCRIPTION_CHARS = 160
MAX_RESULT_CHARS = 4000


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class ToolPrompts:
    def __init__(self, directory: Path = CONFIG_DIR / "prompts", version: str = "v1") -> None:
        self.templates: dict[str, Template] = {}
        for name in TEMPLATES:
            path = directory / f"toolcall_{name}.{version}.txt"
            if not path.is_file():
                raise FileNotFoundError(f"prompt template {path} is missing")
            self.templates[name] = Template(path.read_text().rstrip("\n"))

    def render(self, template: str, **values: Any) -> str:
        return self.templates[template].substitute(**values)

    def tool_line(self, tool: ToolDef) -> str:
        required = set(tool.required)
        args = ", ".join(
            f"{name}{'' if name in required else '?'}: {_type_name(tool.properties[name])}" for name in tool.arg_names()
        )
        description = tool.description
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 3] + "..."
        return self.render("tool", name=tool.name, args=args, description=description)

    def system_block(self, catalog: ToolCatalog) -> str:
        return self.render("system", tools="\n".join(self.tool_line(tool) for tool in catalog))

    def select_turn(self, *, min_calls: int, max_calls: int) -> str:
        rule = "rule_auto" if min_calls == 0 else "rule_required"
        return self.render("select", rule=self.render(rule, max_calls=max_calls))

    def arguments_turn(self, index: int, name: str) -> str:
        return self.render("arguments", index=index, name=name)

    def repair_turn(self, name: str, problems: Sequence[str]) -> str:
        return self.render("repair", name=name, problems="; ".join(problems)[:600])

    def conversation(self, messages: Sequence[ChatMessage], catalog: ToolCatalog | None) -> list[Message]:
        """The messages as the model reads them: tool history as text, the tool list in the system turn."""
        names: dict[str, str] = {}
        out: list[Message] = []
        for message in messages:
            if message.role == "tool":
                name = names.get(message.tool_call_id or "", message.name or "the tool")
                content = message.text()[:MAX_RESULT_CHARS]
                out.append({"role": "user", "content": self.render("history_result", name=name, content=content)})
                continue
            role = "system" if message.role == "developer" else message.role
            text = message.text()
            if message.tool_calls:
                lines = [text] if text else []
                for call in message.tool_calls:
                    name, arguments = _call_parts(call)
                    if isinstance(call.get("id"), str):
                        names[str(call["id"])] = name
                    lines.append(self.render("history_call", name=name, arguments=arguments))
                text = "\n".join(lines)
            out.append({"role": role, "content": text})
        if catalog is not None:
            block = self.system_block(catalog)
            if out and out[0]["role"] == "system":
                out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{block}".strip()}
            else:
                out.insert(0, {"role": "system", "content": block})
        return out


def _call_parts(call: Mapping[str, Any]) -> tuple[str, str]:
    found = call.get("function")
    function: dict[str, Any] = found if isinstance(found, dict) else {}
    name = function.get("name")
    arguments = function.get("arguments")
    return (
        name if isinstance(name, str) else "a tool",
        arguments if isinstance(arguments, str) else compact(arguments or {}),
    )


def _type_name(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("enum"), list):
        return "|".join(compact(value) for value in schema["enum"][:8]) + ("|..." if len(schema["enum"]) > 8 else "")
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        return f"list of {_type_name(schema.get('items'))}"
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf") or []
        return "|".join(_type_name(option) for option in options)
    return str(kind or "any")

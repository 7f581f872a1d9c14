"""Prompt rendering from the versioned template files in configs/prompts/ (string.Template)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from string import Template
from typing import Any

from planner.catalog import ToolCatalog, ToolDef
from planner.demos import Demonstration
from planner.intent import Intent
from planner.llm import Message

TEMPLATES = ("planner_system", "catalog_tool", "request", "node", "oneshot_request", "repair", "replan")


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class PromptBook:
    def __init__(self, directory: Path, version: str) -> None:
        self.version = version
        self.templates: dict[str, Template] = {}
        for name in TEMPLATES:
            path = directory / f"{name}.{version}.txt"
            if not path.is_file():
                raise FileNotFoundError(f"prompt template {path} is missing")
            self.templates[name] = Template(path.read_text().rstrip("\n"))

    def render(self, template: str, **values: Any) -> str:
        return self.templates[template].substitute(**values)

    # pieces ---------------------------------------------------------------------------------
    def tool_line(self, tool: ToolDef) -> str:
        required = set(tool.required)
        args = ", ".join(
            f"{name}{'' if name in required else '?'}: {_type_name(tool.properties[name])}" for name in tool.arg_names()
        )
        outputs = ", ".join(path for path, kind in tool.output_fields if kind != "object") or "(not described)"
        description = tool.description if len(tool.description) <= 120 else tool.description[:117] + "..."
        return self.render("catalog_tool", name=tool.name, args=args, description=description, outputs=outputs)

    def system(self, catalog: ToolCatalog) -> str:
        return self.render("planner_system", catalog="\n".join(self.tool_line(tool) for tool in catalog))

    def request(self, request: str, intent: Intent, *, oneshot: bool = False, extra: str = "") -> str:
        text = self.render(
            "oneshot_request" if oneshot else "request", request=request.strip(), intent=compact(intent.as_dict())
        )
        return text + extra

    def repair(self, previous: str, feedback: str) -> str:
        return "\n" + self.render("repair", previous=previous.strip()[:600], feedback=feedback)

    def replan(self, completed: Mapping[str, str], failure: str) -> str:
        return "\n" + self.render("replan", completed=compact(dict(completed)), failure=failure.strip()[:600])

    # conversations ----------------------------------------------------------------------------
    def staged_example(self, demo: Demonstration, intent: Intent) -> list[Message]:
        """A solved request as the same turns the staged decoder produces."""
        nodes = demo.plan.get("nodes", [])
        turns: list[Message] = [
            {"role": "user", "content": self.request(demo.request, intent)},
            {"role": "assistant", "content": compact({"tools": [n["tool"] for n in nodes]})},
        ]
        for node in nodes:
            turns.append({"role": "user", "content": self.render("node", node_id=node["id"], tool=node["tool"])})
            turns.append({"role": "assistant", "content": compact(node.get("args", {}))})
        return turns

    def oneshot_example(self, demo: Demonstration, intent: Intent) -> list[Message]:
        steps = [{"tool": n["tool"], "args": n.get("args", {})} for n in demo.plan.get("nodes", [])]
        return [
            {"role": "user", "content": self.request(demo.request, intent, oneshot=True)},
            {"role": "assistant", "content": compact({"steps": steps})},
        ]

    def node(self, node_id: str, tool: str) -> str:
        return self.render("node", node_id=node_id, tool=tool)


def grammar_args(args: Mapping[str, Any], tool: ToolDef, optional_args: str) -> dict[str, Any]:
    """Arguments as the grammar makes the model write them: its order; unused optionals null or absent."""
    required = set(tool.required)
    if optional_args == "nullable":
        return {name: args.get(name) for name in tool.arg_names()}
    if optional_args == "omit":
        return {name: args[name] for name in tool.arg_names() if name in required and name in args}
    return {name: args[name] for name in tool.arg_names() if name in args}


def _type_name(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        values = [json.dumps(v) for v in schema["enum"]]
        return "|".join(values[:4]) + ("|…" if len(values) > 4 else "")
    if "anyOf" in schema:
        names = [_type_name(option) for option in schema["anyOf"] if option.get("type") != "null"]
        return "|".join(dict.fromkeys(names)) or "any"
    kind = schema.get("type")
    if kind == "array":
        return f"list[{_type_name(schema.get('items', {}))}]"
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    return str(kind) if kind else "any"


def example_turns(
    book: PromptBook,
    demos: Sequence[Demonstration],
    intents: Sequence[Intent],
    catalog: ToolCatalog,
    *,
    oneshot: bool,
    optional_args: str = "nullable",
) -> list[Message]:
    turns: list[Message] = []
    for demo, intent in zip(demos, intents, strict=True):
        if not oneshot:
            nodes = [
                {**node, "args": grammar_args(node.get("args", {}), catalog.get(node["tool"]), optional_args)}
                for node in demo.plan.get("nodes", [])
            ]
            demo = Demonstration(demo.request, {"nodes": nodes}, demo.score, demo.tenant)
        turns.extend(book.oneshot_example(demo, intent) if oneshot else book.staged_example(demo, intent))
    return turns

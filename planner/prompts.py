"""Prompt rendering from the versioned template files in configs/prompts/ (string.Template).

Templates hold all wording; this module only fills them with the catalog, the request's steps (with
the proposed tool of each when hints are on), the values and references offered to a node, and
solved examples rendered as the same turns the staged decoder produces.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from string import Template
from typing import Any

from contract.demonstrations import Demonstration
from planner.catalog import ToolCatalog, ToolDef
from planner.llm import Message
from planner.steps import split_steps

TEMPLATES = (
    "planner_system",
    "catalog_tool",
    "request",
    "node",
    "oneshot_request",
    "repair",
    "replan",
    "value_rule_grounded",
)
MAX_SHOWN_VALUES = 8


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


_WIDE = re.compile(r"[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]")


def prompt_chars(text: str) -> int:
    """A prompt's length in the units `prompt_max_chars` counts (~2.9 per SmolLM2 token for English): a
    CJK character is about one token, so it counts three."""
    return len(text) + 2 * len(_WIDE.findall(text))


def load_templates(directory: Path, names: Sequence[str], version: str, prefix: str = "") -> dict[str, Template]:
    """`<directory>/<prefix><name>.<version>.txt` for every name; a missing file is an error at start-up."""
    templates: dict[str, Template] = {}
    for name in names:
        path = directory / f"{prefix}{name}.{version}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"prompt template {path} is missing")
        templates[name] = Template(path.read_text().rstrip("\n"))
    return templates


COMPACT_LEVELS = 3  # tool lines: whole (0), shortened (1), required arguments and top fields only (2)
_OPTIONALS = (None, 6, 0)  # optional arguments listed per level (None: all)
_OUTPUTS = (None, 8, 4)  # output fields listed per level
_DESCRIPTION = (120, 70, 40)  # description characters per level


def signature(tool: ToolDef, level: int = 0) -> str:
    """`title: string, count?: integer` — the arguments, required first, `?` for optional ones (a compact
    line lists fewer optional ones and says how many it left out)."""
    required = set(tool.required)
    names = list(tool.arg_names())
    keep = _OPTIONALS[level]
    optional = [n for n in names if n not in required]
    shown = [n for n in names if n in required] + (optional if keep is None else optional[:keep])
    text = ", ".join(f"{name}{'' if name in required else '?'}: {_type_name(tool.properties[name])}" for name in shown)
    left = len(names) - len(shown)
    return text + (f", …{left} more optional" if left else "")


class PromptBook:
    def __init__(self, directory: Path, version: str) -> None:
        self.version = version
        self.templates = load_templates(directory, TEMPLATES, version)

    def render(self, template: str, **values: Any) -> str:
        return self.templates[template].substitute(**values)

    # pieces ---------------------------------------------------------------------------------
    def tool_line(self, tool: ToolDef, level: int = 0) -> str:
        """One tool as the prompt lists it; `level` (0..COMPACT_LEVELS-1) shortens it for a prompt that
        would not fit the model's context (real API catalogs: dozens of arguments and output fields)."""
        level = min(max(level, 0), COMPACT_LEVELS - 1)
        args = signature(tool, level)
        fields = [path for path, kind in tool.output_fields if kind != "object" and (level == 0 or ".0." not in path)]
        cap = _OUTPUTS[level]
        outputs = ", ".join(fields if cap is None else fields[:cap]) or "(not described)"
        size = _DESCRIPTION[level]
        description = tool.description if len(tool.description) <= size else tool.description[: size - 3] + "..."
        return self.render("catalog_tool", name=tool.name, args=args, description=description, outputs=outputs)

    def system(self, catalog: ToolCatalog, *, grounding: str = "free", level: int = 0) -> str:
        """The system prompt; how values and references are written depends on the grounding mode
        (planner/value_grammar.py: grounded references are strings, free/hybrid ones `{"ref": ...}`)."""
        grounded = grounding in ("grounded", "strict")
        return self.render(
            "planner_system",
            catalog="\n".join(self.tool_line(tool, level) for tool in catalog),
            value_rule=self.render("value_rule_grounded") if grounded else "",
            ref_example='"$n1" or "$n1.total"' if grounded else '{"ref": "$n1.total"}',
        )

    def request(
        self,
        request: str,
        steps: Sequence[tuple[str, str | None]] = (),
        *,
        intent: Mapping[str, Any] | None = None,
        oneshot: bool = False,
    ) -> str:
        """The request turn; `steps` are (step text, proposed tool or None) shown under the request."""
        if oneshot:
            return self.render("oneshot_request", request=request.strip())
        lines = []
        if len(steps) > 1 or any(tool for _, tool in steps):
            for number, (text, tool) in enumerate(steps, start=1):
                lines.append(f'Step {number}: "{text}"' + (f" -> {tool}" if tool else ""))
        if intent:
            lines.append("Intent: " + compact(dict(intent)))
        return self.render("request", request=request.strip(), steps="".join("\n" + line for line in lines))

    def node(
        self,
        node_id: str,
        tool: str,
        step: str,
        values: Sequence[Any] = (),
        refs: Sequence[str] = (),
        draft: Mapping[str, Any] | None = None,
    ) -> str:
        shown = "; ".join(compact(v) for v in list(values)[:MAX_SHOWN_VALUES])
        return self.render(
            "node",
            node_id=node_id,
            tool=tool,
            step=step.strip()[:300],
            values=f"\nValues: {shown}." if shown else "",
            refs=f"\nEarlier outputs: {', '.join(refs)}." if refs else "",
            draft=f"\nSuggested: {compact(dict(draft))}." if draft else "",
        )

    def repair(self, previous: str, feedback: str) -> str:
        return "\n" + self.render("repair", previous=previous.strip()[:600], feedback=feedback)

    def replan(self, completed: Mapping[str, str], failure: str) -> str:
        return "\n" + self.render("replan", completed=compact(dict(completed)), failure=failure.strip()[:600])

    # examples -------------------------------------------------------------------------------
    def staged_example(self, demo: Demonstration, catalog: ToolCatalog | None, optional_args: str) -> list[Message]:
        """A solved request as the same turns the staged decoder produces (steps from the request;
        each gold tool shown against its step when the counts agree)."""
        nodes = demo.plan.get("nodes", [])
        tools = [str(n["tool"]) for n in nodes]
        steps = split_steps(demo.request, ())
        texts = [s.text for s in steps]
        pairs: list[tuple[str, str | None]] = (
            list(zip(texts, tools, strict=True)) if len(texts) == len(tools) else [(t, None) for t in texts]
        )
        turns: list[Message] = [
            {"role": "user", "content": self.request(demo.request, pairs)},
            {"role": "assistant", "content": compact({"tools": tools})},
        ]
        for index, node in enumerate(nodes):
            args = node.get("args", {})
            if catalog is not None and node["tool"] in catalog:
                args = grammar_args(args, catalog.get(node["tool"]), optional_args)
            step = texts[index] if len(texts) == len(tools) else demo.request
            turns.append({"role": "user", "content": self.node(node["id"], node["tool"], step)})
            turns.append({"role": "assistant", "content": compact(args)})
        return turns

    def oneshot_example(self, demo: Demonstration) -> list[Message]:
        steps = [{"tool": n["tool"], "args": n.get("args", {})} for n in demo.plan.get("nodes", [])]
        return [
            {"role": "user", "content": self.request(demo.request, oneshot=True)},
            {"role": "assistant", "content": compact({"steps": steps})},
        ]


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
    catalog: ToolCatalog,
    *,
    oneshot: bool,
    optional_args: str = "nullable",
) -> list[Message]:
    turns: list[Message] = []
    for demo in demos:
        turns.extend(book.oneshot_example(demo) if oneshot else book.staged_example(demo, catalog, optional_args))
    return turns

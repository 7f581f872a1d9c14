"""Data flow learned from a tenant's demonstrations (planner/dataflow.py): what is counted, when an
argument becomes references-only, and that the grammar the (scripted, fake) model is given changes for
the tenant whose history it is and for nobody else."""

from __future__ import annotations

import asyncio
import json
from datetime import date
from typing import Any

from contract.demonstrations import Demonstration
from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.dataflow import ArgHistory, LearnedRule, learn_references, learned_references
from planner.demos import WordOverlapDemonstrations
from planner.drafting import cued
from planner.grammar import SchemaBuilder
from planner.service import PlannerService
from planner.upstream import Upstream
from planner.value_grammar import ValueContext
from planner.values import extract
from tests.fakes.llm import FakePlannerLLM


def tool(name: str, props: dict[str, Any], output: dict[str, Any] | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": name,
        "description": name.replace("_", " "),
        "parameters": {"type": "object", "properties": props, "required": list(props)},
    }
    if output is not None:
        function["output_schema"] = {"type": "object", "properties": output}
    return {"type": "function", "function": function}


TOOLS = [
    tool("make_code", {"length": {"type": "integer"}}, {"code": {"type": "string"}}),
    tool("send_text", {"number": {"type": "string"}, "message": {"type": "string"}}),
]
CATALOG = ToolCatalog.from_openai(TOOLS)
SENT_CODE = {
    "nodes": [
        {"id": "n1", "tool": "make_code", "args": {"length": 8}},
        {"id": "n2", "tool": "send_text", "args": {"number": "555-0000", "message": "$n1.code"}},
    ]
}


def demo(plan: dict[str, Any], request: str = "make a code and text it", tenant: str | None = None) -> Demonstration:
    return Demonstration(request, plan, 0.9, tenant)


def test_references_are_counted_per_tool_and_argument_after_the_first_node_only() -> None:
    literal = json.loads(json.dumps(SENT_CODE))
    literal["nodes"][1]["args"]["message"] = "hello"
    namesake = {"nodes": [SENT_CODE["nodes"][0], {"id": "n2", "tool": "send_text", "args": {"body": "$n1.code"}}]}
    first = {"nodes": [{"id": "n1", "tool": "send_text", "args": {"number": "1", "message": "hi"}}]}
    found = learn_references([demo(SENT_CODE), demo(SENT_CODE), demo(literal), demo(namesake), demo(first)], CATALOG)
    assert found[("send_text", "message")].refs == 2 and found[("send_text", "message")].literals == 1
    assert found[("send_text", "message")].sources == {"make_code"}
    assert found[("send_text", "number")].refs == 0 and found[("send_text", "number")].literals == 3
    assert ("send_text", "body") not in found  # another tool of that name: not this catalog's send_text
    assert ("make_code", "length") not in found  # a first node cannot take a reference


def test_the_rule_needs_count_and_rate_and_leaves_a_named_value_alone() -> None:
    rule = LearnedRule(min_count=2, min_rate=0.75)
    assert rule.applies(ArgHistory(refs=3, literals=1)) and not rule.applies(ArgHistory(refs=3, literals=2))
    assert not rule.applies(ArgHistory(refs=1, literals=0)) and not rule.applies(None)
    histories = {("send_text", "message"): ArgHistory(3, 0, {"make_code"})}
    send = CATALOG.get("send_text")
    code, other = Upstream("n1", CATALOG.get("make_code")), Upstream("n2", send)
    assert learned_references(send, histories, rule, [code, other], lambda arg: False) == {"message": ("n1",)}
    assert learned_references(send, histories, rule, [], lambda arg: False) == {}  # no earlier node
    assert learned_references(send, histories, rule, [code], lambda arg: arg == "message") == {}
    values = extract('Make a code and text it with the message "see you" to 555-1234', date(2026, 12, 1))
    assert cued(values, "message", None)  # a quoted value right after the argument's name
    assert not cued(extract("Make a code and send a message containing the code", date(2026, 12, 1)), "message", None)


def test_a_references_only_argument_gets_an_enum_of_the_given_nodes_outputs() -> None:
    builder = SchemaBuilder(PlannerConfig().grammar, 6)
    upstream = [Upstream("n1", CATALOG.get("make_code"), {"length": 8})]
    context = ValueContext(upstream=upstream, refs_only={"message": ("n1",)}, grounding="grounded")
    schema = builder.args_schema(CATALOG.get("send_text"), context)
    assert schema["properties"]["message"] == {"enum": ["$n1.code"]}  # (its whole output is an object)
    assert schema["properties"]["number"] != schema["properties"]["message"]  # its usual grammar
    nothing_fits = ValueContext(upstream=upstream, refs_only={"message": ("n9",)}, grounding="grounded")
    usual = builder.args_schema(CATALOG.get("send_text"), ValueContext(upstream=upstream, grounding="grounded"))
    assert builder.args_schema(CATALOG.get("send_text"), nothing_fits) == usual


def test_only_the_tenant_whose_history_it_is_gets_the_learned_grammar(minilm: Any) -> None:
    history = WordOverlapDemonstrations([demo(SENT_CODE, "make a code of length 8 and text it to 555-0000", "alice")])
    config = PlannerConfig(today=date(2026, 12, 1), tool_choice="model", skeleton_agree_score=None,
                           skeleton_min_score=None, skeleton_repeat_score=None)  # fmt: skip
    request = "Make a code of length 6 and text it to 555-1234"

    def message_grammar(tenant: str) -> Any:
        llm = FakePlannerLLM(
            '{"tools": ["make_code", "send_text"]}', '{"length": 6}', '{"number": "555-1234", "message": "$n1.code"}'
        )
        svc = PlannerService.from_config(config, llm=llm, catalog=CATALOG, demos=history, embedder=minilm)
        result = asyncio.run(svc.plan(request, tenant=tenant, cache_salt=f"salt-{tenant}", tools=TOOLS))
        assert result.path == "model"
        return result.attempts[0].grammars[1]["properties"]["message"]

    assert message_grammar("alice") == {"enum": ["$n1.code"]}
    other = message_grammar("bob")  # no history: request values, references and free text as usual
    assert other != {"enum": ["$n1.code"]} and "anyOf" in other

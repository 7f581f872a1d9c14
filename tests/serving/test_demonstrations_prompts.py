"""The planner reads each tenant's memory, and only that tenant's: asserted on the prompt text.

The stack is the composition root's (real MiniLM, real FAISS memory on disk), with the shared fake
planner model in place of the engine, so every prompt the planner would send is recorded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from planner.llm import LLMRejected
from serving.settings import Settings
from serving.stack import build_stack
from tests.fakes.llm import FakePlannerLLM
from tests.serving.test_demonstrations import GOLD, TOOLS, lines

MARKER = "Quokka-7731"
OWN = f"Get the weather in Oslo and email it to {MARKER}@example.com"
ASKED = "Get the weather in Oslo and email it to ops@example.com"
OWN_PLAN = {
    "nodes": [
        {"id": "n1", "tool": "get_weather", "args": {"city": "Oslo"}},
        {"id": "n2", "tool": "send_email", "args": {"to": f"{MARKER}@example.com", "body": "$n1"}},
    ]
}


def test_one_tenants_demonstrations_never_reach_another_tenants_prompt(tmp_path: Path) -> None:
    llm = FakePlannerLLM()
    stack = build_stack(Settings(home=tmp_path), planner_llm=llm)

    async def scenario() -> tuple[list[str], list[str], Any]:
        service = stack.demonstrations
        await service.import_jsonl("tenantA", lines({"tools": TOOLS}, {"request": OWN, "plan": OWN_PLAN}))
        await service.import_jsonl("tenantB", lines({"tools": TOOLS}, {"request": "Weather in Lima", "plan": GOLD}))
        await stack.planner.plan(ASKED, tenant="tenantB", cache_salt="b", tools=TOOLS)
        seen_by_b = list(llm.prompts)
        llm.history.clear()
        result = await stack.planner.plan(ASKED, tenant="tenantA", cache_salt="a", tools=TOOLS)
        await stack.aclose()
        return seen_by_b, list(llm.prompts), result

    seen_by_b, seen_by_a, result_a = asyncio.run(scenario())
    assert seen_by_b and all(MARKER not in prompt for prompt in seen_by_b)
    assert any("Weather in Lima" in prompt for prompt in seen_by_b)  # B's own memory is used
    assert any(MARKER in prompt for prompt in seen_by_a)  # the same request for A shows A's demonstration
    assert result_a.attempts[0].tools_from == "skeleton"  # and reuses its structure


def test_a_prompt_the_engine_refuses_is_retried_without_the_examples(tmp_path: Path) -> None:
    """Long demonstrations can push a staged conversation past the model's context (vLLM answers 400):
    the next attempt drops the examples instead of failing the same way."""
    llm = FakePlannerLLM(LLMRejected("This model's maximum context length is 2048 tokens", engine_status=400))
    stack = build_stack(Settings(home=tmp_path), planner_llm=llm)

    async def scenario() -> Any:
        await stack.demonstrations.import_jsonl("tenantA", lines({"tools": TOOLS}, {"request": OWN, "plan": OWN_PLAN}))
        result = await stack.planner.plan(ASKED, tenant="tenantA", cache_salt="a", tools=TOOLS)
        await stack.aclose()
        return result

    result = asyncio.run(scenario())
    first, retry = llm.prompts[0], llm.prompts[1]
    assert MARKER in first and MARKER not in retry
    assert result.attempts[0].error_layer == "engine" and "no examples" in result.attempts[1].changes[0]

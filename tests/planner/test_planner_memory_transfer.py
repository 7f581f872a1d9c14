"""A demonstration's structure reused for another request (planner/nodes.py, planner/service.py): its
tools, data flow and required constants transfer; its optional constants only to a request that asks for
nothing else. The scripted fake model stands in for the engine; the embedder is the packaged
MiniLM (a shape is what that model reads)."""

from __future__ import annotations

import asyncio
import json
from datetime import date
from typing import Any

from contract.demonstrations import Demonstration
from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.demos import EmbeddingDemonstrations
from planner.service import PlannerService
from planner.similarity import CachedEmbedder
from tests.fakes.llm import FakePlannerLLM
from tests.planner import real_catalogs as rc

TODAY = date(2026, 11, 30)
TAUGHT = Demonstration(
    "Invoice Globex 500 euros and e-mail it to them",
    {
        "nodes": [
            {"id": "n1", "tool": "searchCustomers", "args": {"query": "Globex"}},
            {
                "id": "n2",
                "tool": "createInvoice",
                "args": {
                    "customerId": "$n1.customers.0.customerId",
                    "amount": 500,
                    "currency": "EUR",
                    "sendEmail": True,
                },
            },
        ]
    },
    0,
    "acme",
)


def plan(minilm: CachedEmbedder, request: str, *answers: dict[str, Any]) -> tuple[Any, FakePlannerLLM]:
    memory = EmbeddingDemonstrations([TAUGHT], minilm)
    llm = FakePlannerLLM(*(json.dumps(a) for a in answers))
    svc = PlannerService.from_config(
        PlannerConfig(today=TODAY), llm=llm, catalog=ToolCatalog.from_openai(rc.CRM), demos=memory, embedder=minilm
    )
    result = asyncio.run(svc.plan(request, tenant="acme", cache_salt="s", tools=rc.CRM))
    return result, llm


def test_an_optional_constant_transfers_only_to_a_request_that_asks_for_nothing_else(minilm: CachedEmbedder) -> None:
    ref = {"customerId": "$n1.customers.0.customerId"}
    same, llm = plan(minilm, "Invoice Initech 700 euros", {"query": "Initech"}, {**ref, "amount": 700})
    assert same.attempts[0].tools_from == "skeleton"
    offered = same.attempts[0].grammars[-1]["properties"]
    assert offered["customerId"] == {"enum": ["$n1.customers.0.customerId"]}  # the data flow it was taught
    assert offered["sendEmail"] == {"enum": [True]}  # the user's choice, for a request of the same ask

    other, llm = plan(minilm, "Invoice ACME 1200 euros, due in 30 days", {"query": "ACME"}, {**ref, "amount": 1200})
    assert other.attempts[0].tools_from == "skeleton"
    offered = other.attempts[0].grammars[-1]["properties"]
    assert offered["dueDays"] == {"enum": [30]}  # this request asks for a due date: its own evidence decides
    assert "sendEmail" not in offered  # so the demonstration's other choices are not written for it


def test_the_same_request_with_other_values_reuses_the_structure_however_far_its_words_are(
    minilm: CachedEmbedder,
) -> None:
    taught = Demonstration(
        "Invoice 'Globex Holdings' 500 euros with the note 'Retainer for the spring audit work'",
        {
            "nodes": [
                {"id": "n1", "tool": "searchCustomers", "args": {"query": "Globex Holdings"}},
                {
                    "id": "n2",
                    "tool": "createInvoice",
                    "args": {"customerId": "$n1.customers.0.customerId", "amount": 500, "currency": "EUR",
                             "notes": "Retainer for the spring audit work"},
                },
            ]
        },
        0,
        "acme",
    )  # fmt: skip
    request = "Invoice 'Initech' 700 euros with the note 'Two new printers, delivered Monday'"
    answers = ('{"query": "Initech"}', '{"customerId": "$n1.customers.0.customerId", "amount": 700}')

    def tools_from(**config: Any) -> str:
        svc = PlannerService.from_config(
            PlannerConfig(today=TODAY, skeleton_agree_score=None, skeleton_min_score=None, **config),
            llm=FakePlannerLLM(*answers),
            catalog=ToolCatalog.from_openai(rc.CRM),
            demos=EmbeddingDemonstrations([taught], minilm),
            embedder=minilm,
        )
        result = asyncio.run(svc.plan(request, tenant="acme", cache_salt="s", tools=rc.CRM))
        return result.attempts[0].tools_from

    words = minilm.embed([request, taught.request])
    assert float(words[0] @ words[1]) < 0.85  # as written, the quoted values make them look far apart
    assert tools_from() == "skeleton"  # values masked, they are the same request: its structure is reused
    assert tools_from(skeleton_repeat_score=None) != "skeleton"

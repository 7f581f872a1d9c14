"""The realistic set in the harness, on a tiny set of the same format: per-case catalogs, answers, filler."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import apis
from benchmarks.harness.accuracy import run_dataset, summarize_variant
from benchmarks.harness.datasets import Case, load_apis
from benchmarks.harness.online import build_stream
from benchmarks.harness.planners import Outcome, planner_config
from contract.plan import Plan
from planner.config import PlannerConfig

JSON = "application/json"


def op(op_id: str, params: list[dict[str, Any]], output: dict[str, Any]) -> dict[str, Any]:
    content = {JSON: {"schema": output}}
    return {"operationId": op_id, "parameters": params, "responses": {"200": {"description": "ok", "content": content}}}


def q(name: str, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": {"type": "string"}}


DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "CRM", "version": "1"},
    "paths": {
        f"/{name}": {"get": op(name, params, {"type": "object", "properties": {"id": {"type": "string"}}})}
        for name, params in {
            "searchCustomers": [q("query", True), q("limit")],
            "createInvoice": [q("customerId", True), q("currency"), q("notes")],
            "listInvoices": [q("status")],
            "deleteInvoice": [q("invoiceId", True)],
            "getCustomer": [q("customerId", True)],
            "listCustomers": [q("page")],
            "archiveCustomer": [q("customerId", True)],
        }.items()
    },
}
NAMES = [p.strip("/") for p in DOCUMENT["paths"]]


def row(rid: str, split: str, gold: dict[str, Any], candidates: list[str] | None = None) -> dict[str, Any]:
    tools = candidates or NAMES[:6]
    return {"id": rid, "api": "crm", "lang": "en", "template": rid, "split": split, "request": f"request {rid}",
            "candidates": tools, "gold": gold}  # fmt: skip


SEARCH_THEN_INVOICE = {
    "nodes": [
        {"id": "n1", "tool": "searchCustomers", "args": {"query": "ACME"}},
        {"id": "n2", "tool": "createInvoice", "args": {"customerId": "$n1.id", "currency": "EUR"}},
    ]
}


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(apis.ENV, raising=False)
    (tmp_path / "documents").mkdir()
    raw = json.dumps(DOCUMENT).encode()
    (tmp_path / "documents" / "crm.json").write_bytes(raw)
    document = {"file": "crm.json", "repo": "o/r", "path": "crm.json", "commit": "0" * 40, "licence": "MIT",
                "bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}  # fmt: skip
    manifest = {"today": "2026-12-01", "apis": {"crm": {"title": "CRM", "scored_only": False, "documents": [document]}}}
    (tmp_path / "sources.json").write_text(json.dumps(manifest))
    rows = [
        row("d-1", "dev", SEARCH_THEN_INVOICE),
        row("d-2", "dev", {"no_plan": True}),
        row("s-1", "scored", {"nodes": [{"id": "n1", "tool": "listInvoices", "args": {"status": "open"}}]}),
        row("s-2", "scored", {"no_plan": True}),
        row("s-3", "scored", {"needs_input": ["deleteInvoice.invoiceId"]}),
    ]
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


class Scripted:
    def __init__(self, script: dict[str, tuple[Plan | None, str]]) -> None:
        self.script = script

    async def plan(self, case: Case) -> Outcome:
        plan, path = self.script[case.id]
        return Outcome(plan, path, 0.1)


def test_each_case_plans_over_its_own_candidates_and_scored_examples_come_from_dev(data: Path) -> None:
    dev, scored = load_apis("dev", data=data), load_apis("scored", data=data)
    assert dev.name == "apis-dev" and dev.per_case_tools and dev.demonstrations is None
    assert [c.expect for c in scored.cases] == ["plan", "no_plan", "needs_input"]
    assert scored.cases[2].needs_input == ("deleteInvoice.invoiceId",)
    assert [t["function"]["name"] for t in scored.cases[0].tools or []] == NAMES[:6]
    assert scored.demonstrations == [("request d-1", SEARCH_THEN_INVOICE), ("request d-2", {"nodes": []})]
    assert str(scored.today) == "2026-12-01" and any(k.endswith("crm.json") for k in scored.hashes)
    assert planner_config(PlannerConfig(), scored, "planner").prompt_max_tools <= 6


def test_answers_are_scored_as_gold_says_and_filler_is_counted_against_each_catalog(data: Path) -> None:
    scored = load_apis("scored", data=data)
    padded = Plan.model_validate(
        {"nodes": [{"id": "n1", "tool": "listInvoices", "args": {"status": "open"}},
                   {"id": "n2", "tool": "listCustomers", "args": {"page": "2"}}]}
    )  # fmt: skip
    script = {
        "s-1": (padded, "model"),  # right tool, plus a node nobody asked for
        "s-2": (None, "no_plan"),  # right
        "s-3": (Plan.model_validate({"nodes": [{"id": "n1", "tool": "deleteInvoice", "args": {"invoiceId": "INV-1"}}]}), "model"),
    }  # fmt: skip
    rows = asyncio.run(run_dataset(scored, {"planner": Scripted(script)}, executor=None))["planner"]
    first, second, third = (r.primary for r in rows)
    assert first["node_f1"] == pytest.approx(2 / 3) and first["answer_correct"] == 1.0
    assert (first["optional_written"], first["optional_unsupported"]) == (2.0, 1.0)  # page is filler
    assert "node_f1" not in second and second["no_plan_correct"] == 1.0
    assert third["needs_input_correct"] == 0.0  # an invented id instead of asking
    flat = summarize_variant(rows)["flat"]
    assert flat["node_f1"] == pytest.approx(0.6667, abs=1e-4)  # over the one request whose gold is a plan
    assert flat["answer_correct"] == pytest.approx(0.6667, abs=1e-4) and flat["filler_rate"] == 0.5


def test_the_online_stream_keeps_each_cases_catalog_and_split(data: Path) -> None:
    stream = build_stream([load_apis("dev", data=data), load_apis("scored", data=data)], seed=0, requests=None)
    assert {stream.half[c.id] for c in stream.dataset.cases if c.id.startswith("d-")} == {"pool"}
    assert {stream.half[c.id] for c in stream.dataset.cases if c.id.startswith("s-")} == {"scored"}
    assert all(len(stream.tools_of(c) or []) == 6 for c in stream.dataset.cases)

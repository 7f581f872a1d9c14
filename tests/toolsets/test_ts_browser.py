"""The README walkthrough's run, in a REAL headless Chromium (tests/ui/browser.py) against the real gateway
and the REAL example services: a run calls the inventory MCP server and the billing OpenAPI service, and
asks the user a question; the run page shows the question with an answer box, the answer typed there
moves the run on, and the run finishes with the answer in the created invoice. Screenshots are saved as
artifacts (the README's docs/toolsets-run.png is the last one)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.conftest import KEY_A
from tests.sources.conftest import ServiceProcess
from tests.toolsets.conftest import ToolsetGateway, billing_document, register
from tests.ui.browser import artifacts_dir, attribute_of, click, headless_chromium, node_statuses, text_of, wait_for

pytestmark = [pytest.mark.fake_upstream, pytest.mark.slow]
WALKTHROUGH_PLAN: dict[str, Any] = {
    "nodes": [
        {"id": "n1", "tool": "find_products", "args": {"name": "hinge"}},
        {"id": "n2", "tool": "get_stock", "args": {"product_id": "$n1.products.0.product_id"}},
        {"id": "n3", "tool": "searchCustomers", "args": {"name": "acme"}},
        {"id": "n4", "tool": "ask_user", "args": {"question": "Which purchase order number goes on Acme's invoice?"}},
        {"id": "n5", "tool": "createInvoice", "args": {"customerId": "$n3.customers.0.id", "amountCents": 48000, "memo": "$n4.answer"}},
    ]
}  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    with headless_chromium(width=1400, height=1500) as driver:
        yield driver


def test_a_question_is_answered_on_the_run_page(
    gateway: ToolsetGateway, mcp_server: ServiceProcess, billing_plus: ServiceProcess, browser: webdriver.Chrome
) -> None:
    with gateway.client() as client:
        register(client, {"name": "inventory", "kind": "mcp", "url": f"{mcp_server.url}/mcp"})
        register(client, {"name": "billing", "kind": "openapi", "document": billing_document(billing_plus), "base_url": billing_plus.url})
        body = {"request": "Invoice Acme for 100 brass hinges if we have them in stock",
                "toolsets": ["inventory", "billing", "ask_user"], "plan": WALKTHROUGH_PLAN}  # fmt: skip
        created = client.post("/v1/runs", json=body)
        assert created.status_code == 202, created.text
        run_id = created.json()["run_id"]
    browser.get(f"{gateway.url}/ui/")
    browser.execute_script("sessionStorage.setItem('planstack.api_key', arguments[0]);", KEY_A)
    browser.get(f"{gateway.url}/ui/#/runs/{run_id}")
    wait_for(browser, lambda d: d.find_elements(By.ID, "question-n4"), timeout_s=60)
    assert text_of(browser, "#question-n4") == "Which purchase order number goes on Acme's invoice?"
    wait_for(browser, lambda d: node_statuses(d).get("n4") == "requires_action")
    statuses = node_statuses(browser)
    assert statuses["n1"] == statuses["n2"] == statuses["n3"] == "succeeded" and statuses["n5"] == "pending"
    browser.save_screenshot(str(artifacts_dir() / "toolsets-question.png"))
    browser.find_element(By.ID, "answer-n4").send_keys("PO-2027-0042")
    click(browser, "#send-n4")
    wait_for(browser, lambda d: attribute_of(d, "#run-status", "data-status") == "succeeded", timeout_s=60)
    wait_for(browser, lambda d: node_statuses(d).get("n5") == "succeeded")
    click(browser, "#dag g.node[data-node='n5']")
    wait_for(browser, lambda d: "PO-2027-0042" in (text_of(d, "#details-output") or ""))
    browser.save_screenshot(str(artifacts_dir() / "toolsets-run.png"))
    with gateway.client() as client:
        view = client.get(f"/v1/runs/{run_id}").json()
    invoice = next(r for r in view["nodes"] if r["node_id"] == "n5")["output"]
    assert invoice["memo"] == "PO-2027-0042" and invoice["customerId"] == "cus_100"

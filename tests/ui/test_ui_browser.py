"""The web UI in a REAL headless Chromium (Debian's, driven by selenium) against the REAL gateway on
loopback: log in with a key, start a run with a parallel branch and a failing node from the page,
watch it reach its final state live (node colours and the timeline read from the DOM), open a
node's details, approve a waiting run from the page, see another tenant's run as "not found", find
an escalated run in the queue and plan a request on the plan page.
Screenshots are saved as artifacts (tests/ui/browser.py says where)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.conftest import KEY_A, KEY_A_APPROVER, KEY_B
from tests.ui.browser import (
    artifacts_dir,
    attribute_of,
    click,
    gantt_bars,
    headless_chromium,
    node_statuses,
    text_of,
    wait_for,
)
from tests.ui.conftest import SteeringStack
from tests.ui.helpers import booking_plan, parallel_failing_plan

pytestmark = pytest.mark.fake_upstream
T = TypeVar("T")


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    with headless_chromium() as driver:
        yield driver


def log_in(driver: webdriver.Chrome, url: str, key: str) -> None:
    driver.get(f"{url}/ui/")
    driver.execute_script("sessionStorage.clear();")
    driver.get(f"{url}/ui/#/runs")
    field = wait_for(driver, lambda d: d.find_element(By.ID, "api-key"))
    field.send_keys(key)
    driver.find_element(By.ID, "login").click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "runs-table"))


def when_ready(value: T, ready: Callable[[T], bool]) -> T | None:
    """`value` once `ready(value)` holds (for waits that return what they read)."""
    return value if ready(value) else None


def run_status(driver: webdriver.Chrome) -> str:
    return attribute_of(driver, "#run-status", "data-status") or ""


def test_a_run_with_a_parallel_branch_and_a_failing_node_is_watched_live(
    stack: SteeringStack, browser: webdriver.Chrome
) -> None:
    log_in(browser, stack.url, KEY_A)
    assert browser.execute_script("return sessionStorage.getItem('planstack.api_key')") == KEY_A
    assert KEY_A not in browser.current_url  # the key never goes into a URL
    browser.find_element(By.ID, "new-request").send_keys("Flights and hotels, the weather, payments and rates")
    browser.find_element(By.ID, "new-plan").send_keys(json.dumps(parallel_failing_plan()))
    browser.find_element(By.ID, "start-run").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#dag g.node"))
    seen_running = wait_for(browser, lambda d: "running" in node_statuses(d).values() or run_status(d) == "failed")
    assert seen_running
    wait_for(browser, lambda d: run_status(d) == "failed", timeout_s=30)
    statuses = wait_for(browser, lambda d: when_ready(node_statuses(d), lambda s: s.get("n8") == "succeeded"))
    assert statuses == {
        "n1": "succeeded",
        "n2": "succeeded",
        "n3": "retried",
        "n4": "failed",
        "n5": "skipped",
        "n6": "failed",
        "n7": "fallback",
        "n8": "succeeded",
    }
    colours = browser.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#dag g.node')].map("
        "g => [g.dataset.node, getComputedStyle(g.querySelector('rect')).fill]));"
    )
    assert (
        colours["n1"] == colours["n2"] != colours["n4"]
        and len({colours[n] for n in ("n1", "n3", "n4", "n5", "n7")}) == 5
    )
    assert text_of(browser, "#run-status") == "escalated"  # failed for good: pushed to a person
    bars = wait_for(browser, lambda d: when_ready(gantt_bars(d), lambda b: {"0/n1", "0/n2", "0/n4"} <= b.keys()))
    flights, hotels = bars["0/n1"], bars["0/n2"]
    assert flights["start"] < hotels["end"] and hotels["start"] < flights["end"]  # the parallel branch overlaps
    assert flights["width"] > 100 and abs(flights["x"] - hotels["x"]) < flights["width"] / 2
    assert bars["0/n4"]["start"] >= flights["end"] - 0.05  # n4 waited for n1
    assert "0/n5" not in bars  # skipped: never ran
    click(browser, '#dag g.node[data-node="n4"]')
    details = wait_for(browser, lambda d: text_of(d, '#details[data-node="n4"]'))
    assert "explode" in details and "always-payments backend exploded" in details
    assert "tool_exception" in (text_of(browser, "#details-error") or "")
    assert '"input_hash"' in (text_of(browser, "#details-meta") or "")
    click(browser, '#dag g.node[data-node="n3"]')
    attempts = wait_for(browser, lambda d: text_of(d, "#details-attempts"))
    assert "unavailable" in attempts and "retried after" in attempts
    assert "path: given" in (text_of(browser, "#planner") or "")
    browser.set_window_size(1400, 2200)
    browser.save_screenshot(str(artifacts_dir() / "run-parallel-failing.png"))
    browser.set_window_size(1400, 1100)


def test_a_waiting_run_is_approved_from_the_page(stack: SteeringStack, browser: webdriver.Chrome) -> None:
    with stack.client() as client:
        run_id = client.post("/v1/runs", json={"request": "book a hotel", "plan": booking_plan("Page Hotel")}).json()[
            "run_id"
        ]
    log_in(browser, stack.url, KEY_A)  # the application's own key sees the request but may not decide it
    browser.get(f"{stack.url}/ui/#/runs/{run_id}")
    click(browser, "#approve")  # found and clicked in one step: the page redraws while the run waits
    problem = wait_for(browser, lambda d: text_of(d, "#decision-error"))
    assert problem is not None and "approver" in problem and stack.calls.counts["book:Page Hotel"] == 0
    log_in(browser, stack.url, KEY_A_APPROVER)  # a person's key, with the approver scope
    browser.find_element(By.ID, "status-filter").send_keys("awaiting approval")
    wait_for(browser, lambda d: d.execute_script("return location.hash") == "#/runs?status=awaiting_approval")
    row = f'#runs-body tr[data-run-id="{run_id}"]'  # read in one step: the list redraws live (a found row goes stale)
    assert wait_for(browser, lambda d: attribute_of(d, row, "data-status")) == "awaiting_approval"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#runs-body tr[data-run-id]")) == 1  # filtered
    click(browser, f"{row} a")
    wait_for(browser, lambda d: d.find_elements(By.ID, "approve"))
    assert node_statuses(browser)["n2"] == "awaiting_approval"
    held = text_of(browser, "#held-calls") or ""
    assert "book_hotel" in held and '"Page Hotel"' in held and '"price": 100' in held  # resolved arguments
    browser.save_screenshot(str(artifacts_dir() / "run-awaiting-approval.png"))
    assert stack.calls.counts["book:Page Hotel"] == 0
    browser.find_element(By.ID, "decider-name").send_keys("Page Operator")
    browser.find_element(By.ID, "approve").click()
    wait_for(browser, lambda d: run_status(d) == "succeeded", timeout_s=30)
    wait_for(browser, lambda d: node_statuses(d).get("n4") == "succeeded")
    assert stack.calls.counts["book:Page Hotel"] == 1
    view = stack.wait_status(run_id, "succeeded")
    by = view["approval"]["decisions"][0]["by"]
    assert (by["tenant"], by["name"]) == ("tenantA", "Page Operator") and by["key_id"].startswith("key_")
    browser.save_screenshot(str(artifacts_dir() / "run-approved.png"))


def test_another_tenant_s_run_is_not_found(stack: SteeringStack, browser: webdriver.Chrome) -> None:
    with stack.client() as client:
        run_id = client.post("/v1/runs", json={"request": "mine", "plan": booking_plan("Private")}).json()["run_id"]
    log_in(browser, stack.url, KEY_B)
    assert not browser.find_elements(By.CSS_SELECTOR, f'#runs-body tr[data-run-id="{run_id}"]')
    browser.get(f"{stack.url}/ui/#/runs/{run_id}")
    message = wait_for(browser, lambda d: text_of(d, "#not-found"))
    assert message == "Run not found."
    assert not browser.find_elements(By.ID, "approve") and "Private" not in browser.page_source
    browser.save_screenshot(str(artifacts_dir() / "other-tenant-not-found.png"))


def test_the_escalation_queue_and_the_plan_page(stack: SteeringStack, browser: webdriver.Chrome) -> None:
    """The two pages no other test opens: a failed run waits in the queue, and a request is planned
    (by the fallback planner: the fake upstream writes no plan) and drawn without executing it."""
    plan = {"nodes": [{"id": "n1", "tool": "explode", "args": {"label": "always-queue"}}]}
    with stack.client() as client:
        run_id = client.post("/v1/runs", json={"request": "pay", "plan": plan}).json()["run_id"]
    assert stack.wait_status(run_id, "failed")["escalation"]["state"] == "open"
    log_in(browser, stack.url, KEY_A)
    browser.find_element(By.ID, "nav-escalations").click()
    queued = f'#escalations-body tr[data-run-id="{run_id}"]'  # (read in one step, as above)
    assert "replans_exhausted" in wait_for(browser, lambda d: text_of(d, queued))
    browser.find_element(By.ID, "nav-plan").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "plan-request"))[0].send_keys("Weather in Hangzhou on June 20")
    browser.find_element(By.ID, "make-plan").click()
    path = wait_for(browser, lambda d: text_of(d, "#plan-path"), timeout_s=60)
    statuses = node_statuses(browser)
    assert path.startswith("path: fallback") and statuses and set(statuses.values()) == {"planned"}
    click(browser, "#dag g.node")
    assert '"tool"' in (wait_for(browser, lambda d: text_of(d, "#plan-node")) or "")
    browser.save_screenshot(str(artifacts_dir() / "plan-page.png"))

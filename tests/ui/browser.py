"""A real headless Chromium driven by selenium (pinned in scripts/requirements/common.txt).

Debian's `chromium` and `chromium-driver` (scripts/ensure_chromium.sh installs them when missing; CI
runs as root with Debian's registry); selenium is given both paths, so it never downloads a
browser or a driver. Chromium runs with a fresh profile and without its background networking
(the machine has no network beyond loopback). Screenshots go to `benchmarks/results/tmp/ui/`
(git-ignored), or to `$PLANSTACK_UI_ARTIFACTS`.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.wait import WebDriverWait

REPO = Path(__file__).resolve().parents[2]
ENSURE_SCRIPT = REPO / "scripts" / "ensure_chromium.sh"
T = TypeVar("T")


def artifacts_dir() -> Path:
    folder = Path(os.environ.get("PLANSTACK_UI_ARTIFACTS", REPO / "benchmarks" / "results" / "tmp" / "ui"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def chromium_paths() -> tuple[str, str]:
    """(browser, driver); installs Debian's packages first when they are missing."""
    found = subprocess.run(["bash", str(ENSURE_SCRIPT)], capture_output=True, text=True, check=False)
    lines = found.stdout.strip().splitlines()
    if found.returncode != 0 or len(lines) < 2:
        raise RuntimeError(f"Chromium is not available: {found.stderr.strip()[-500:]}")
    return lines[-2], lines[-1]


@contextmanager
def headless_chromium(width: int = 1400, height: int = 1100) -> Iterator[webdriver.Chrome]:
    browser, driver_path = chromium_paths()
    with tempfile.TemporaryDirectory(prefix="planstack-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for arg in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
        ):
            options.add_argument(arg)
        driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
        try:
            yield driver
        finally:
            driver.quit()


def wait_for(driver: webdriver.Chrome, condition: Callable[[webdriver.Chrome], T], timeout_s: float = 20) -> T:
    result: T = WebDriverWait(driver, timeout_s, poll_frequency=0.05).until(condition)
    return result


def text_of(driver: webdriver.Chrome, css: str) -> str | None:
    """The text of the first element matching `css`, read in one step (the page re-renders live, so a
    found element may be replaced before a second call could read it); None when there is none."""
    text: str | None = driver.execute_script(
        "const el = document.querySelector(arguments[0]); return el ? el.innerText : null;", css
    )
    return text


def attribute_of(driver: webdriver.Chrome, css: str, name: str) -> str | None:
    value: str | None = driver.execute_script(
        "const el = document.querySelector(arguments[0]); return el ? el.getAttribute(arguments[1]) : null;", css, name
    )
    return value


def click(driver: webdriver.Chrome, css: str, timeout_s: float = 10) -> None:
    """Click the element matching `css` once it exists (found and clicked in one step)."""
    script = "const el = document.querySelector(arguments[0]); if (!el) return false; el.dispatchEvent(new MouseEvent('click', {bubbles: true})); return true;"
    wait_for(driver, lambda d: d.execute_script(script, css), timeout_s)


def node_statuses(driver: webdriver.Chrome) -> dict[str, str]:
    """node id → its status, as drawn in the DAG (the `data-status` of each SVG node)."""
    script = "return [...document.querySelectorAll('#dag g.node')].map(g => [g.dataset.node, g.dataset.status]);"
    pairs: list[list[str]] = driver.execute_script(script)
    return {node: status for node, status in pairs}


def gantt_bars(driver: webdriver.Chrome) -> dict[str, dict[str, Any]]:
    """Timeline bars by `round/node`: start, end (Unix seconds), status, and the drawn x/width."""
    script = """return [...document.querySelectorAll('#gantt rect.bar')].map(r => ({
        key: r.dataset.node, start: +r.dataset.start, end: +r.dataset.end, cls: r.getAttribute('class'),
        x: +r.getAttribute('x'), width: +r.getAttribute('width')}));"""
    bars: list[dict[str, Any]] = driver.execute_script(script)
    return {bar["key"]: bar for bar in bars}

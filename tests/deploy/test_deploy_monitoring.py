"""configs/deploy/monitoring: the Prometheus alert rules and the Grafana dashboard, checked by Prometheus's
own `promtool` (Debian's `prometheus` package; scripts/ensure_promtool.sh installs it when missing):

- `promtool check rules` on the alert rules, and `promtool test rules` on their unit tests (each alert
  fires on the series that should fire it, and not on healthy ones);
- every dashboard query is valid PromQL (`promtool check rules` on a rules file made of them);
- the rules and the dashboard use only series the gateway exports (serving/metrics.py), with labels
  it sets.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from serving.metrics import GatewayMetrics
from tests.deploy.router import REPO_ROOT

pytestmark = pytest.mark.deploy
MONITORING = REPO_ROOT / "configs" / "deploy" / "monitoring"
SERIES = re.compile(r"\b(planstack_[a-z_]+)\b")
GROUPED = re.compile(r"\bby \(([^)]*)\)")


def promtool() -> str:
    found = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "ensure_promtool.sh")], capture_output=True, text=True, check=False
    )
    lines = found.stdout.strip().splitlines()
    if found.returncode != 0 or not lines:
        raise RuntimeError(f"promtool is not available: {found.stderr.strip()[-500:]}")
    return lines[-1]


def run_promtool(*args: str, cwd: Path = MONITORING) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def alert_exprs() -> list[str]:
    rules = yaml.safe_load((MONITORING / "alerts.yaml").read_text())
    return [rule["expr"] for group in rules["groups"] for rule in group["rules"]]


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    return loaded


def dashboard_exprs() -> list[str]:
    return [target["expr"] for panel in dashboard()["panels"] for target in panel["targets"]]


def exported() -> tuple[set[str], set[str]]:
    """(series names, label names) the gateway's registry exports."""
    names: set[str] = set()
    labels: set[str] = {"le"}
    for family in GatewayMetrics().registry.collect():
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}.get(family.type, [""])
        names |= {family.name + suffix for suffix in suffixes}
    metrics = GatewayMetrics()
    for collector in (metrics.tool_calls, metrics.tool_seconds, metrics.tool_retries, metrics.tool_breaker,
                      metrics.runs_finished, metrics.runs_waiting_gauge, metrics.plans):  # fmt: skip
        labels |= set(collector._labelnames)
    return names, labels


def test_the_alert_rules_pass_promtool_and_their_unit_tests() -> None:
    checked = run_promtool("check", "rules", "alerts.yaml")
    assert checked.returncode == 0 and "SUCCESS: 7 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = run_promtool("test", "rules", "alerts.test.yaml")
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_every_dashboard_query_is_valid_promql(tmp_path: Path) -> None:
    board = dashboard()
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids)) and all(panel["targets"] for panel in board["panels"])
    titles = " ".join(panel["title"] for panel in board["panels"])
    for wanted in ("error rate", "p95 latency", "Re-plan rate", "Fallback plan rate", "waiting for approval or tool outputs"):
        assert wanted in titles
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"planstack:dashboard:panel_{i}", "expr": expr} for i, expr in enumerate(dashboard_exprs())
    ]}]}  # fmt: skip
    (tmp_path / "dashboard-rules.yaml").write_text(yaml.safe_dump(rules))
    checked = run_promtool("check", "rules", "dashboard-rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    broken = {"groups": [{"name": "x", "rules": [{"record": "x:y", "expr": "sum by (tool (rate(x[5m]))"}]}]}
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump(broken))
    assert run_promtool("check", "rules", "broken.yaml", cwd=tmp_path).returncode != 0  # it really parses PromQL


def test_rules_and_dashboard_use_only_series_and_labels_the_gateway_exports() -> None:
    names, labels = exported()
    for expr in alert_exprs() + dashboard_exprs():
        for series in SERIES.findall(expr):
            assert series in names, f"{series} is not exported by serving/metrics.py ({expr})"
        for grouped in GROUPED.findall(expr):
            for label in (part.strip() for part in grouped.split(",")):
                assert label in labels, f"label {label!r} is not set by the gateway ({expr})"

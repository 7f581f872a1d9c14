"""Reports: the CLI writes JSON + Markdown + PNG (against a real gateway in front of the fake upstream),
and `compare` diffs two reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.harness.cli import app
from benchmarks.harness.report import compare, flatten, git_commit, machine_info, redact_argv
from tests.conftest import KEY_A, FakeStack

runner = CliRunner()


def test_flatten_and_compare_known_numbers() -> None:
    a = {"summary": {"chat/closed/c=1": {"latency_p95_s": {"mean": 2.0, "stdev": 0.1, "n": 3}, "n": {"mean": 10}}}}
    b = {
        "summary": {
            "chat/closed/c=1": {"latency_p95_s": {"mean": 1.5, "stdev": 0.0, "n": 3}},
            "new": {"x": {"mean": 1}},
        }
    }
    assert flatten(a["summary"]) == {"chat/closed/c=1 · latency_p95_s": 2.0, "chat/closed/c=1 · n": 10.0}
    rows = {r["metric"]: r for r in compare(a, b)}
    assert (
        rows["chat/closed/c=1 · latency_p95_s"]["delta"] == -0.5
        and rows["chat/closed/c=1 · latency_p95_s"]["relative"] == -0.25
    )
    assert (
        rows["chat/closed/c=1 · n"]["b"] is None and rows["new · x"]["a"] is None and rows["new · x"]["delta"] is None
    )


def test_secrets_are_masked_in_the_recorded_command_line() -> None:
    argv = ["planstack", "bench", "latency", "--api-key", "sk-1", "--url", "u", "--api-key=sk-2"]
    assert redact_argv(argv) == [
        "planstack",
        "bench",
        "latency",
        "--api-key",
        "********",
        "--url",
        "u",
        "--api-key=********",
    ]


def test_metadata_names_the_commit_and_machine() -> None:
    assert git_commit()["commit"] is None or len(git_commit()["commit"]) == 40
    info = machine_info()
    assert info["cpu_count"] and info["python"] and isinstance(info["gpus"], list)


@pytest.mark.fake_upstream
def test_cli_writes_reports_and_compares_them(fake_stack: FakeStack, tmp_path: Path) -> None:
    url = fake_stack.gateway.url
    common = ["--quiet", "--out", str(tmp_path), "--api-key", KEY_A]
    lat = runner.invoke(
        app,
        [
            "latency",
            "--url",
            url,
            "--phase",
            "planner:c=1,2:n=2",
            "--phase",
            "chat:c=1:rate=10:n=3",
            "--warmup",
            "1",
            "--repeat",
            "2",
            "--note",
            "fake upstream",
            *common,
        ],
    )
    assert lat.exit_code == 0, lat.output
    report = json.loads((tmp_path / "latency.json").read_text())
    assert report["kind"] == "latency" and report["meta"]["model"] == "fake-model"
    assert report["config"]["dataset"]["sha256"] and report["meta"]["seeds"] == {"arrivals": 0}
    assert report["summary"]["planner/closed/c=2"]["latency_p50_s"]["n"] == 2  # two repeats
    assert len(report["phases"]) == 8
    md = (tmp_path / "latency.md").read_text()
    assert "planner/closed/c=1" in md and "fake upstream" in md and "latency_cdf.png" in md
    for png in ("latency_cdf.png", "latency_vs_concurrency.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    acc = runner.invoke(
        app,
        [
            "accuracy",
            "--gateway-url",
            url,
            "--dataset",
            "travel:3",
            "--variants",
            "planner,unconstrained,nn_copy",
            *common,
        ],
    )
    assert acc.exit_code == 0, acc.output
    report = json.loads((tmp_path / "accuracy.json").read_text())
    planner = report["summary"]["travel_meeting"]["planner"]
    assert planner["primary_share"]["mean"] == 0.0 and planner["fallback_share"]["mean"] == 1.0  # fake: fallback only
    assert planner["node_f1"]["mean"] == 0.0 and planner["fallback_only.node_f1"]["mean"] > 0
    assert "unconstrained" in report["skipped"] and report["datasets"]["travel_meeting"]["sha256"]
    assert (tmp_path / "accuracy_by_plan_size.png").exists() and "nearest-neighbour" in (
        tmp_path / "accuracy.md"
    ).read_text()

    diff_path = tmp_path / "diff.md"
    same = runner.invoke(
        app, ["compare", str(tmp_path / "latency.json"), str(tmp_path / "latency.json"), "--out", str(diff_path)]
    )
    assert same.exit_code == 0 and "+0.0%" in same.output and diff_path.read_text() == same.output.rstrip("\n") + "\n"
    bad = runner.invoke(app, ["compare", str(tmp_path / "latency.md"), str(tmp_path / "latency.json")])
    assert bad.exit_code != 0


def test_accuracy_needs_a_planner_url() -> None:
    result = runner.invoke(app, ["accuracy", "--dataset", "travel:1", "--quiet"])
    assert result.exit_code != 0

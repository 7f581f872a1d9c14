"""The online mode end to end without the engine: the shared fake planner model in place of vLLM.

What is checked is the loop, not the model: every request plans over its own candidate catalog, the gold
plan goes through the gateway's feedback path into a fresh tenant memory after the request, so the
memory only holds earlier requests; windows, the after-N rows, the report and its learning curve.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from benchmarks.harness import markdown, plots
from benchmarks.harness.datasets import load_nestful
from benchmarks.harness.online import build_stream, run_online
from benchmarks.harness.report import meta
from tests.fakes.llm import FakePlannerLLM


class Progress:
    def __init__(self) -> None:
        self.advanced = 0

    def add_task(self, _label: str, total: int) -> int:
        return total

    def advance(self, _task: int) -> None:
        self.advanced += 1


def test_stream_is_seeded_and_each_request_has_its_candidates() -> None:
    sgd, glaive = load_nestful("sgd"), load_nestful("glaive")
    one = build_stream([sgd, glaive], seed=3, requests=30)
    two = build_stream([sgd, glaive], seed=3, requests=30)
    assert [c.id for c in one.dataset.cases] == [c.id for c in two.dataset.cases]
    assert {c.id.split("-")[0] for c in one.dataset.cases} == {"sgd", "glaive"}
    specs = {t["function"]["name"] for t in [*(sgd.tools or []), *(glaive.tools or [])]}
    for case in one.dataset.cases:
        tools = one.tools_of(case)
        assert tools is not None and len(tools) == 6
        assert {n.tool for n in case.gold.nodes} & specs <= {t["function"]["name"] for t in tools}
    assert set(one.half.values()) == {"pool", "scored"}


def test_feedback_grows_the_memory_request_by_request(tmp_path: Path) -> None:
    progress = Progress()
    out = asyncio.run(
        run_online(
            [load_nestful("sgd", limit=8)],
            FakePlannerLLM(),  # answers "{": the model path fails, the fallback plans; the loop is what is tested
            tmp_path,
            progress,
            seed=1,
            requests=6,
            window=2,
            after=2,
        )
    )
    rows, summary = out["result"], out["online"]
    memory, copy = rows["memory"], rows["nn_copy"]
    refused = {r["id"] for r in summary["rejected"]}  # sgd-007's gold plan breaks its own spec: refused
    assert refused == {"sgd-007"} and "Hotels.SearchHotel" in summary["rejected"][0]["error"]
    sizes = [r["index_size"] for r in memory["rows"]]
    expected = [sum(1 for earlier in memory["rows"][:i] if earlier["id"] not in refused) for i in range(6)]
    assert sizes == expected == [0, 1, 2, 3, 4, 4]  # the memory holds exactly the earlier accepted requests
    assert copy["rows"][0]["path"] == "none"  # an empty memory has nothing to copy
    assert [w["index_size"] for w in memory["online"]] == [0, 2, 4]
    assert summary["accepted"] == 5 and progress.advanced == 18
    assert summary["after_target"]["memory"]["all"]["n"] == 4
    assert (tmp_path / "indexes" / "tenants" / "bench-online" / "demonstrations" / "manifest.json").is_file()

    report = {
        "kind": "accuracy",
        "meta": meta(model="fake", seeds={"stream": 1}),
        "config": {"online": True, "engine_url": "fake", "repeat": 1},
        "runs": [{out["name"]: rows}],
        "summary": {out["name"]: {v: {"n": {"mean": 6}} for v in ("memory", "zeroshot", "nn_copy")}},
        "datasets": {out["name"]: out["describe"]},
        "online": [summary],
    }
    text = markdown.accuracy_markdown(report, ["curve.png"])
    assert "at least 2 accepted examples" in text and "| memory | scored halves only |" in text
    assert plots.learning_curve(report, tmp_path / "curve.png").stat().st_size > 10_000

"""`planstack bench accuracy --online`: the planner learning from one tenant's feedback, request by request.

The stream: the given data sets merged, shuffled with a fixed seed, its first `requests` requests. Each
request plans over its own catalog — NESTFUL: its gold tools plus seeded distractors from its spec file,
6 in all (benchmarks/splits.candidate_tools), the demo domain: the registry — and after it has been
planned by every variant, its gold plan is sent as feedback on the memory variant's plan id, as a user
correcting plans would, through the gateway's own path: the composition root's stack (serving/stack.py)
with its SQLite run store for plan records, the feedback service (serving/demonstrations.py: validation
against the plan's catalog) and the tenant's FAISS memory on MiniLM. So the memory only ever holds
earlier requests. Variants, same stream, same engine:

- `memory`: the production planner reading the tenant's memory (and the shipped packs);
- `zeroshot`: the same planner without demonstrations (k = 0);
- `nn_copy`: the plan of the nearest demonstration in the same memory whose tools are all in the
  request's catalog (no model).

Reported per window of `window` requests against the demonstrations accepted before it, and as means
over the requests planned once `after` examples were accepted (the target), for the whole stream and for
the requests of the template-disjoint splits' scored halves alone (never used to choose thresholds).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from benchmarks import metrics, splits
from benchmarks.harness.accuracy import ANSWER_KEYS, PLAN_KEYS, Row, dataset_result, run_dataset
from benchmarks.harness.datasets import Case, Dataset
from benchmarks.harness.planners import Outcome, PlanSource, ServicePlanner, patiently, planner_config
from contract.plan import Plan
from planner.catalog import ToolCatalog
from planner.demos import usable
from planner.llm import PlannerLLM
from planner.results import PlanResult
from serving.demonstrations import Feedback
from serving.errors import InvalidRequestError
from serving.settings import load_settings
from serving.stack import Stack, build_planner, build_stack

TENANT = "bench-online"
CANDIDATES = 6
SPLIT_SEED = 13  # the planner benchmark's split: its scored halves are what thresholds never saw


@dataclass
class Stream:
    """The shuffled stream as one data set, with each request's catalog and split half."""

    dataset: Dataset
    tools: dict[str, list[dict[str, Any]] | None]
    half: dict[str, str]  # case id -> "pool" | "scored" | "-" (no split: the demo domain)

    def tools_of(self, case: Case) -> list[dict[str, Any]] | None:
        return self.tools[case.id]


def build_stream(datasets: Sequence[Dataset], *, seed: int, requests: int | None) -> Stream:
    cases: list[Case] = []
    tools: dict[str, list[dict[str, Any]] | None] = {}
    half: dict[str, str] = {}
    for data in datasets:
        if data.tools is not None:
            split = splits.template_disjoint_split(data.cases, lambda c: c.gold.model_dump(), seed=SPLIT_SEED)
            half.update({c.id: "scored" for c in split.scored} | {c.id: "pool" for c in split.pool})
        for case in data.cases:
            gold_tools = [n.tool for n in case.gold.nodes]
            if case.tools is not None:  # the realistic set: its own candidates and its own split
                tools[case.id] = case.tools
                half[case.id] = "pool" if case.split == "dev" else "scored"
            else:
                tools[case.id] = (
                    None
                    if data.tools is None
                    else splits.candidate_tools(gold_tools, data.tools, size=CANDIDATES, key=case.id)
                )
            half.setdefault(case.id, "-")
            cases.append(case)
    random.Random(seed).shuffle(cases)
    cases = cases[: requests or None]
    name = "stream(" + "+".join(d.name for d in datasets) + ")"
    hashes = {k: v for d in datasets for k, v in d.hashes.items()}
    stream = Dataset(name, cases, tools=None, executable=False, hashes=hashes, total=sum(d.total for d in datasets))
    return Stream(stream, tools, half)


def describe(stream: Stream) -> dict[str, Any]:
    info = stream.dataset.describe()
    info["tools"] = (
        f"{CANDIDATES} candidates per NESTFUL or realistic-set request (its own + distractors), the registry for travel"
    )
    info["halves"] = dict(sorted(Counter(stream.half[c.id] for c in stream.dataset.cases).items()))
    return info


class Patient:
    """A plan source that waits out an engine outage (benchmarks.harness.planners.patiently)."""

    def __init__(self, inner: PlanSource) -> None:
        self.inner = inner

    async def plan(self, case: Case) -> Outcome:
        return await patiently(lambda: self.inner.plan(case))


class NearestUsable:
    """Baseline without a model: the plan of the nearest demonstration in the memory that fits the catalog."""

    def __init__(self, stack: Stack, stream: Stream) -> None:
        self.stack = stack
        self.stream = stream

    async def plan(self, case: Case) -> Outcome:
        start = time.perf_counter()
        tools = self.stream.tools_of(case)
        catalog = self.stack.planner.catalog if tools is None else ToolCatalog.from_openai(tools)
        found = await asyncio.to_thread(self.stack.demonstrations.memory.search, case.request, 8, tenant=TENANT)
        fits = usable(found, catalog)
        if not fits:
            return Outcome(None, "none", time.perf_counter() - start, error="no demonstration fits the catalog")
        return Outcome(Plan.model_validate(fits[0].plan), "copy", time.perf_counter() - start)


@dataclass
class FeedbackLoop:
    """Keeps the memory variant's plan id per request and sends the gold plan as feedback on it."""

    stack: Stack
    stream: Stream
    plan_ids: dict[str, str] = field(default_factory=dict)
    rejected: list[dict[str, str]] = field(default_factory=list)
    imported: int = 0
    not_plans: int = 0  # requests whose right answer is no plan or a question: no feedback sent

    async def remember(self, case: Case, result: PlanResult) -> None:
        await self.stack.demonstrations.remember(TENANT, case.request, self.stream.tools_of(case), result)
        self.plan_ids[case.id] = result.plan_id

    async def send(self, case: Case) -> None:
        service = self.stack.demonstrations
        gold = case.gold.model_dump(exclude_none=True)
        plan_id = self.plan_ids.pop(case.id, None)
        if case.expect != "plan":  # the right answer was "no plan" / "ask": there is no plan to teach
            self.not_plans += 1
            return
        try:
            if plan_id is not None:
                await service.feedback(TENANT, plan_id, Feedback(accepted=None, corrected_plan=gold))
            else:  # planning failed outright (no plan id): the user imports the right plan instead
                line = json.dumps({"request": case.request, "plan": gold, "tools": self.stream.tools_of(case)})
                await service.import_jsonl(TENANT, line)
                self.imported += 1
        except InvalidRequestError as exc:  # a gold plan the validation layers refuse is not learned
            self.rejected.append({"id": case.id, "error": exc.message[:200]})

    def accepted(self) -> int:
        return self.stack.demonstrations.memory.usage(TENANT).count


async def run_online(
    datasets: Sequence[Dataset],
    llm: PlannerLLM,
    home: Path,
    progress: Any,
    *,
    seed: int,
    requests: int | None,
    window: int,
    after: int,
    variants: Sequence[str] = ("memory", "zeroshot", "nn_copy"),
) -> dict[str, Any]:
    """One pass over the stream with a fresh memory under `home`; the accuracy report's `runs` entry."""
    stream = build_stream(datasets, seed=seed, requests=requests)
    secret = SecretStr("bench-online-secret-" + "0" * 16)  # nothing written to <home>/secret
    config = planner_config(load_settings(home=home, secret=secret).planner, stream.dataset, "planner")
    stack = build_stack(load_settings(home=home, secret=secret, planner=config), planner_llm=llm)
    async with stack:
        loop = FeedbackLoop(stack, stream)
        zeroshot = build_planner(
            stack.planner.config.model_copy(update={"demonstrations_k": 0}),
            llm=llm,
            catalog=stack.planner.catalog,
            embedder=stack.planner.embedder,
        )
        every: dict[str, PlanSource] = {
            "memory": Patient(
                ServicePlanner(stack.planner, tools=stream.tools_of, on_result=loop.remember, tenant=TENANT)
            ),
            "zeroshot": Patient(ServicePlanner(zeroshot, tools=stream.tools_of, tenant=TENANT)),
            "nn_copy": NearestUsable(stack, stream),
        }
        sources = {name: every[name] for name in variants}
        task = progress.add_task(f"online {stream.dataset.name}", total=len(stream.dataset.cases) * len(sources))
        rows = await run_dataset(
            stream.dataset,
            sources,
            executor=None,
            on_scored=loop.send,
            index_size=loop.accepted,
            tick=lambda _: progress.advance(task),
            tools_of=stream.tools_of,
        )
        result = dataset_result(rows, online_window=window)
        result["example_index"] = {"backend": "retrieval.memory.TenantMemory (FAISS, MiniLM)", "size_at_start": 0}
        summary = {
            "seed": seed,
            "requests": len(stream.dataset.cases),
            "window": window,
            "after": after,
            "accepted": loop.accepted(),
            "imported_without_plan_id": loop.imported,
            "no_feedback_not_a_plan": loop.not_plans,
            "rejected": loop.rejected,
            "after_target": {name: after_target(rows[name], stream, after) for name in sources},
        }
    return {"name": stream.dataset.name, "result": result, "online": summary, "describe": describe(stream)}


async def online_report(
    datasets: Sequence[Dataset],
    engine_url: str,
    model: str,
    home_root: Path,
    progress: Any,
    *,
    repeat: int,
    seed: int,
    requests: int | None,
    window: int,
    after: int,
    timeout_s: float,
) -> dict[str, Any]:
    """`repeat` passes (each with a fresh memory) as the accuracy report's runs, summary and datasets."""
    from benchmarks.harness.stats import across_repeats
    from serving.stack import standalone_planner_llm

    passes = []
    from serving.engine.process import existing_engine_key
    from serving.settings import load_settings

    key = existing_engine_key(load_settings())  # the engine's key, when it was started from this home
    async with standalone_planner_llm(engine_url, model, timeout_s=timeout_s, api_key=key) as llm:
        for r in range(repeat):
            home = home_root / f"pass-{r}"
            passes.append(
                await run_online(
                    datasets, llm, home, progress, seed=seed, requests=requests, window=window, after=after
                )
            )
    name = passes[0]["name"]
    runs = [{name: p["result"]} for p in passes]
    variants = [v for v in runs[0][name] if v != "example_index"]
    summary = {name: {v: across_repeats([run[name][v]["flat"] for run in runs]) for v in variants}}
    return {
        "runs": runs,
        "summary": summary,
        "skipped": {},
        "online": [p["online"] for p in passes],
        "datasets": {name: passes[0]["describe"]},
    }


def after_target(rows: Sequence[Row], stream: Stream, after: int) -> dict[str, Any]:
    """Own-path means over the requests planned with at least `after` accepted examples in the memory."""
    late = [r for r in rows if r.index_size >= after]
    scored = [r for r in late if stream.half.get(r.case.id) == "scored"]
    return {"all": _means(late), "scored_half": _means(scored)}


def _means(rows: Sequence[Row]) -> dict[str, Any]:
    """Each metric over the rows that have it (plan metrics where the gold is a plan), filler pooled."""
    pooled = metrics.aggregate([r.primary for r in rows])
    return {"n": len(rows), **{k: pooled[k] for k in (*PLAN_KEYS, *ANSWER_KEYS) if k in pooled}}

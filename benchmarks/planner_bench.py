"""Planner benchmarks.

`python -m benchmarks.planner_bench compile` — grammar compile time per backend and catalog size
(offline, no engine) → benchmarks/results/grammar_compile.{json,md}.
`python -m benchmarks.planner_bench offline` — no engine: reachability ceiling of the grammar, gold-tool
recall@k of the embedding shortlist, and the model-free baselines → benchmarks/results/planner_offline.*
`python -m benchmarks.planner_bench run [--sets glaive sgd apis] [--variants ...] [--engine-url URL]` — the
planner on NESTFUL with a template-disjoint split (zero-shot, cross-domain and in-domain demonstrations)
and the baselines in the same run, plus the travel/meeting set with its pack → benchmarks/results/planner.*
`--sets apis` adds the realistic set over real REST APIs (benchmarks/apis.py): `apis-dev` (leave-one-out
examples) and `apis-scored` (examples from dev); `offline --sets apis --out apis_baselines` gives its
model-free baselines.
Any data/spec pair in the NESTFUL format can be added with `--data FILE --spec FILE --name NAME`.
`python -m benchmarks.planner_bench calibrate [--precision 0.9]` — the skeleton thresholds, chosen on the pools
(benchmarks/skeleton_calibration.py; no engine) → benchmarks/results/skeleton_calibration.{json,md}
`python -m benchmarks.planner_bench calibrate-refs` — the learned data-flow rule, chosen on the pools
(benchmarks/reference_calibration.py; no engine) → benchmarks/results/reference_calibration.{json,md}
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import nestful, planner_eval
from benchmarks.grammar_compile import compile_markdown, compile_report
from benchmarks.planner_report import markdown
from contract.plan import Plan
from planner.config import PlannerConfig
from planner.similarity import CachedEmbedder
from serving.engine.process import existing_engine_key
from serving.settings import load_settings
from serving.stack import standalone_planner_llm

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TRAVEL = ROOT / "benchmarks" / "datasets" / "travel_meeting.jsonl"
DEFAULT_MODEL_DIR = Path.home() / ".cache" / "planstack" / "models" / "smollm2-135m-instruct"
VARIANTS = ("zeroshot", "cross", "indomain", "unconstrained", "bare")


def embedder() -> CachedEmbedder:
    from retrieval.embedder import SentenceTransformerEmbedder

    return CachedEmbedder(SentenceTransformerEmbedder(cpu_threads=1))


def eval_sets(args: argparse.Namespace) -> list[planner_eval.EvalSet]:
    sets = []
    for name in args.sets:
        if name == "apis":  # the realistic set: its dev and scored halves (benchmarks/apis.py)
            halves = planner_eval.load_apis_sets(limit=args.limit)
            sets += [h for h in halves if args.on == "scored" or h.name == "apis-dev"]
            continue
        sets.append(
            planner_eval.load_set(
                name,
                nestful.data_path(name, args.root),
                nestful.spec_path(name, args.root),
                seed=args.seed,
                limit=args.limit,
            )
        )
    if args.data and args.spec:
        sets.append(planner_eval.load_set(args.name, args.data, args.spec, seed=args.seed, limit=args.limit))
    if args.on == "pool":  # development: score the pool, never look at the scored half
        sets = [
            s
            if s.leave_one_out
            else planner_eval.EvalSet(s.name, [], s.pool[: args.limit or None], s.all_tools, s.split, s.family)
            for s in sets
        ]
    return sets


def base_config(args: argparse.Namespace) -> PlannerConfig:
    update: dict[str, Any] = {"today": planner_eval.TODAY, "cache_ttl_s": 0.0}
    if args.grounding:
        update["grounding"] = args.grounding
    if args.tool_choice:
        update["tool_choice"] = args.tool_choice
    return PlannerConfig().model_copy(update=update)


async def offline(args: argparse.Namespace) -> dict[str, Any]:
    config = base_config(args)
    emb = embedder()
    report: dict[str, Any] = {"kind": "offline", "sets": {}}
    for data in eval_sets(args):
        entry: dict[str, Any] = {"split": data.split, "n": len(data.scored)}
        entry["reachability"] = [
            planner_eval.reachability(data.scored, config, g) for g in ("grounded", "hybrid", "free")
        ]
        entry["baselines"] = [
            await planner_eval.proposal_only(data.scored, config, emb),
            await planner_eval.nearest_copy(data.scored, data.pool, emb, leave_one_out=data.leave_one_out),
        ]
        every = (
            nestful.load_cases(data.name, path=nestful.data_path(data.name, args.root))
            if data.name in ("glaive", "sgd")
            else []
        )
        if every:
            entry["shortlist_recall"] = await planner_eval.shortlist_recall(
                data.name, data.all_tools, every, emb, config
            )
        report["sets"][data.name] = entry
    _write(report, args.out or "planner_offline")
    return report


async def run(args: argparse.Namespace) -> dict[str, Any]:
    config = base_config(args)
    emb = embedder()
    report: dict[str, Any] = {
        "kind": "run",
        "engine_url": args.engine_url,
        "model": args.model,
        "backend": args.backend,
        "config": json.loads(config.model_dump_json()),
        "sets": {},
    }
    sets = eval_sets(args)
    stem = args.out or "planner"
    if args.merge and (RESULTS / f"{stem}.json").is_file():  # keep what an earlier (interrupted) run measured
        earlier = json.loads((RESULTS / f"{stem}.json").read_text())
        report["sets"] = earlier.get("sets", {})
    key = existing_engine_key(load_settings())  # the engine's key, when it was started from this home
    async with standalone_planner_llm(args.engine_url, args.model, timeout_s=300, api_key=key) as llm:
        for data in sets:
            others = [d for d in sets if d.family != data.family]  # "cross-domain": another family's pool
            entry: dict[str, Any] = report["sets"].get(data.name) or {"split": data.split, "n": len(data.scored)}
            entry.setdefault("variants", [])
            report["sets"][data.name] = entry
            done = {v["key"] for v in entry["variants"]}
            plans = {
                "zeroshot": (
                    "planner, zero-shot (no demonstrations)",
                    config.model_copy(update={"demonstrations_k": 0}),
                    [],
                ),
                "cross": (
                    "planner, cross-domain demonstrations (other file's pool)",
                    config,
                    [d for o in others for d in planner_eval.pool_demos(o.pool)],
                ),
                "indomain": (
                    "planner, in-domain disjoint demonstrations (this file's pool)",
                    config,
                    planner_eval.pool_demos(data.pool),
                ),
                "unconstrained": (
                    "baseline: no grammar, zero-shot (one call, no retries, no fallback)",
                    config.model_copy(
                        update={
                            "strategy": "unconstrained",
                            "demonstrations_k": 0,
                            "max_retries": 0,
                            "fallback_enabled": False,
                        }
                    ),
                    [],
                ),
                "bare": (
                    "baseline: bare one-shot JSON grammar (tool enum, any arguments), zero-shot",
                    config.model_copy(
                        update={"strategy": "bare", "demonstrations_k": 0, "max_retries": 0, "fallback_enabled": False}
                    ),
                    [],
                ),
            }
            for key in args.variants:
                label, variant_config, demos = plans[key]
                if (key == "cross" and not demos) or key in done:
                    continue
                source = planner_eval.LeaveOneOut(demos, emb) if key == "indomain" and data.leave_one_out else None
                result = await planner_eval.run_planner(
                    label, data.scored, variant_config, llm, emb, demos, data.name, source=source
                )
                entry["variants"].append({"key": key, **result})
                _write(report, stem)
            entry["baselines"] = [
                await planner_eval.proposal_only(data.scored, config, emb),
                await planner_eval.nearest_copy(data.scored, data.pool, emb, leave_one_out=data.leave_one_out),
            ]
            _write(report, stem)
        if args.travel and not (args.merge and "travel_meeting" in report["sets"]):
            cases = _travel_cases(args.travel)
            result = await planner_eval.run_planner(
                "planner with the travel pack (its demonstrations)", cases, config, llm, emb, [], "travel"
            )
            report["sets"]["travel_meeting"] = {"n": len(cases), "variants": [{"key": "pack", **result}]}
            _write(report, stem)
    return report


async def _calibrate(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.skeleton_calibration import calibrate

    if not args.engine_url:
        return await calibrate(args.sets, args.root, seed=args.seed, precision=args.precision, embedder=embedder())
    async with standalone_planner_llm(
        args.engine_url, args.model, timeout_s=300, api_key=existing_engine_key(load_settings())
    ) as llm:
        return await calibrate(
            args.sets,
            args.root,
            seed=args.seed,
            precision=args.precision,
            embedder=embedder(),
            llm=llm,
            cache=args.cache,
        )


def _travel_cases(limit: int) -> list[planner_eval.EvalCase]:
    from executors.tools import default_registry
    from serving.stack import openai_tools_of

    tools = openai_tools_of(default_registry())  # the demo tools with their output schemas, as the gateway has them
    rows = [json.loads(line) for line in TRAVEL.read_text().splitlines() if line.strip()]
    return [planner_eval.EvalCase(r["id"], r["request"], Plan.model_validate(r["plan"]), tools) for r in rows[:limit]]


def _write(report: dict[str, Any], stem: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(report, indent=1, default=str))
    (RESULTS / f"{stem}.md").write_text(markdown(report))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.planner_bench")
    sub = parser.add_subparsers(dest="command", required=True)
    comp = sub.add_parser("compile", help="grammar compile time per backend and catalog size (offline)")
    comp.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    comp.add_argument("--timeout", type=float, default=30.0)
    comp.add_argument("--sizes", type=int, nargs="+", default=[6, 20, 50])
    for name, text in (
        ("offline", "ceiling, shortlist recall, model-free baselines"),
        ("run", "the planner on the engine"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument(
            "--sets",
            nargs="*",
            default=["glaive", "sgd"],
            help="NESTFUL files (glaive, sgd) and/or apis (the realistic set's dev and scored halves)",
        )
        cmd.add_argument("--root", type=Path, default=nestful.DEFAULT_ROOT, help="folder of the NESTFUL files")
        cmd.add_argument("--data", type=Path, help="another data file in the NESTFUL format")
        cmd.add_argument("--spec", type=Path, help="its spec file")
        cmd.add_argument("--name", default="external", help="its name in the report")
        cmd.add_argument("--seed", type=int, default=13, help="split seed")
        cmd.add_argument("--limit", type=int, default=None, help="scored requests per set (default: all)")
        cmd.add_argument("--grounding", choices=["grounded", "hybrid", "free"], default=None)
        cmd.add_argument("--tool-choice", choices=["model", "proposal"], default=None)
        cmd.add_argument("--out", default=None, help="report file stem under benchmarks/results/")
        cmd.add_argument(
            "--on",
            choices=["scored", "pool"],
            default="scored",
            help="evaluate the scored half (reports) or the pool (development; demonstrations then come only "
            "from other files)",
        )
    run_cmd = sub.choices["run"]
    run_cmd.add_argument("--engine-url", default="http://127.0.0.1:8001")
    run_cmd.add_argument("--model", default="smollm2-135m-instruct")
    run_cmd.add_argument("--backend", default="outlines", help="the engine's structured-output backend (label only)")
    run_cmd.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    run_cmd.add_argument("--travel", type=int, default=20, help="travel/meeting requests (0: skip)")
    run_cmd.add_argument("--merge", action="store_true", help="keep the sets/variants an earlier run measured")
    cal = sub.add_parser("calibrate", help="skeleton thresholds on the pools (offline)")
    cal.add_argument("--sets", nargs="*", default=["glaive", "sgd"], help="NESTFUL files (glaive, sgd)")
    cal.add_argument("--root", type=Path, default=nestful.DEFAULT_ROOT, help="folder of the NESTFUL files")
    cal.add_argument("--seed", type=int, default=13, help="split seed")
    cal.add_argument("--precision", type=float, default=0.9, help="structure precision a threshold must keep")
    cal.add_argument("--engine-url", default=None, help="measure the planner without a skeleton on the pools")
    cal.add_argument("--model", default="smollm2-135m-instruct")
    cal.add_argument("--cache", type=Path, default=None, help="JSON file keeping measured items (resumable)")
    refs = sub.add_parser("calibrate-refs", help="the learned data-flow rule on the pools (offline)")
    refs.add_argument("--sets", nargs="*", default=["glaive", "sgd"], help="NESTFUL files (glaive, sgd)")
    refs.add_argument("--root", type=Path, default=nestful.DEFAULT_ROOT, help="folder of the NESTFUL files")
    refs.add_argument("--seed", type=int, default=13, help="split seed")
    refs.add_argument("--precision", type=float, default=0.85, help="share of forced arguments that must be refs")
    refs.add_argument("--omitted", type=float, default=0.15, help="most forced arguments gold leaves out")
    args = parser.parse_args(argv)
    if args.command == "calibrate-refs":
        from benchmarks.reference_calibration import calibrate as calibrate_refs
        from benchmarks.reference_calibration import calibration_markdown as refs_markdown

        found = calibrate_refs(
            args.sets, args.root, seed=args.seed, precision=args.precision, omitted=args.omitted, embedder=embedder()
        )
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "reference_calibration.json").write_text(json.dumps(found, indent=1))
        (RESULTS / "reference_calibration.md").write_text(refs_markdown(found))
    elif args.command == "calibrate":
        report = asyncio.run(_calibrate(args))
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "skeleton_calibration.json").write_text(json.dumps(report, indent=1))
        from benchmarks.skeleton_calibration import calibration_markdown

        (RESULTS / "skeleton_calibration.md").write_text(calibration_markdown(report))
    elif args.command == "compile":
        report = compile_report(args.model_dir, args.timeout, args.sizes)
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "grammar_compile.json").write_text(json.dumps(report, indent=1))
        (RESULTS / "grammar_compile.md").write_text(compile_markdown(report))
    elif args.command == "offline":
        asyncio.run(offline(args))
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()

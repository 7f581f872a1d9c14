"""Keep client `response_format` schemas from taking the engine down.

Measured with vLLM 0.32 on a 2-core CPU: a schema whose outlines compile outruns vLLM's timeout
(5 s, `VLLM_REGEX_COMPILATION_TIMEOUT_S`) fails with HTTP 500, and vLLM abandons the compiling thread
without stopping it; a dozen of those killed the engine (`EngineDeadError`). So before a client
schema reaches the engine the gateway:

1. applies static limits (serialised size, nesting depth, number of sub-schemas, local `$ref`s only);
2. for the outlines backend, compiles the schema exactly as vLLM would (outlines_core's JSON-schema
   → regex → token index over the served model's vocabulary) in a separate worker process with a
   time budget well below the engine's own timeout; a schema over budget is a 400, and the worker is
   killed and replaced, so a runaway compile costs nothing beyond its budget;
3. remembers verdicts by schema hash, so a repeated schema (good or bad) costs nothing;
4. bounds the memory a client's grammars can hold in the engine. vLLM keeps the last 128 compiled
   indexes (an LRU) whatever their size, and outlines' index grows with the schema's freedom
   (serialised, on SmolLM2's vocabulary: an unbounded string 0.3 MB, `maxLength: 40` 10 MB, two bounded
   strings 41 MB, `{"type": "object"}` 25 MB — 212 MB resident in the engine). Filling that cache with
   heavy schemas OOM-killed the shared engine. So the worker reports each index's size (outlines: its
   serialised bytes; xgrammar: `memory_size_bytes`), one schema may hold at most `max_index_mib`, and
   a mirror of the engine's LRU keeps the sum over the last 128 distinct client schemas under
   `index_budget_mib`, one tenant's under `tenant_index_budget_mib`: past it a new heavy schema is a 400
   (`schema_too_complex`) until lighter traffic has pushed the old ones out.

The worker compiles exactly the text the engine will compile (`json.dumps` of the schema, keys in the
client's order: property order is generation order, so a sorted copy is another grammar).

The worker can die (killed, out of memory): the request whose compile it was running gets a 503
`schema_check_unavailable` (retryable, never cached as a verdict), and the next check uses the warm
spare (or starts a fresh worker). Only verdicts that do not depend on the load are remembered: a
compile that ran out of time without having had its whole budget of CPU (a busy machine) answers
503 and is tried again next time; one that burned its budget is a cached 400 like any other.
Compiles run one at a time; at most `max_waiting` requests wait for one (at most
`max_waiting_per_tenant` of one tenant), the rest get a 429 with Retry-After at once. A cached
verdict never waits.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import multiprocessing
import os
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from serving.errors import InvalidRequestError, RateLimitError, SchemaCheckUnavailableError, SchemaTooComplexError
from serving.metrics import GatewayMetrics
from serving.settings import SchemaGuardSettings, StructuredBackend

logger = logging.getLogger("planstack.schema_guard")

WORKER_START_TIMEOUT_S = 120.0
WALL_FACTOR = 3.0  # a compile starved of CPU is given up after this many times its CPU budget in wall time
ENGINE_INDEX_CACHE = 128  # vLLM's outlines index LRU (vllm/v1/structured_output/utils.py)
MIB = 2**20


def schema_shape(schema: Any, depth: int = 1) -> tuple[int, int]:
    """(deepest nesting, number of dict/list nodes) of a JSON value."""
    if isinstance(schema, dict):
        children = [schema_shape(value, depth + 1) for value in schema.values()]
    elif isinstance(schema, list):
        children = [schema_shape(value, depth + 1) for value in schema]
    else:
        return depth - 1, 0
    deepest = max((child[0] for child in children), default=depth)
    return max(depth, deepest), 1 + sum(child[1] for child in children)


def _refs(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        found = [schema["$ref"]] if isinstance(schema.get("$ref"), str) else []
        return found + [ref for value in schema.values() for ref in _refs(value)]
    if isinstance(schema, list):
        return [ref for value in schema for ref in _refs(value)]
    return []


def check_static_limits(schema: dict[str, Any], limits: SchemaGuardSettings) -> str:
    """The canonical JSON text of an acceptable schema; SchemaTooComplexError otherwise."""
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    param = "response_format.json_schema.schema"
    if len(text) > limits.max_schema_bytes:
        raise SchemaTooComplexError(
            f"the schema is {len(text)} bytes; the limit is {limits.max_schema_bytes}", param=param
        )
    depth, nodes = schema_shape(schema)
    if depth > limits.max_depth:
        raise SchemaTooComplexError(f"the schema nests {depth} levels; the limit is {limits.max_depth}", param=param)
    if nodes > limits.max_nodes:
        raise SchemaTooComplexError(f"the schema has {nodes} sub-schemas; the limit is {limits.max_nodes}", param=param)
    for ref in _refs(schema):
        if not ref.startswith("#"):
            raise InvalidRequestError(f"only local $ref values are allowed, not {ref!r}", param=param)
    return text


# ---- the compile worker (runs in a child process) ------------------------------------------------

# What every worker imports before it loads the vocabulary: about 10 s of CPU here (transformers
# brings torch). A forkserver imports them once; each worker (the first, its spare, every restart
# after a kill) is then forked from it and ready in about a second instead of paying them again.
WORKER_PRELOAD = ["transformers", "outlines_core", "xgrammar", "vllm.v1.structured_output.utils"]


def _worker_context() -> Any:
    """The multiprocessing context the compile workers start in: a forkserver that preloaded
    WORKER_PRELOAD where the platform has one (modules it cannot import are skipped), else spawn."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_PRELOAD)
    return context


def _worker_main(conn: Connection, model_dir: str, backend: str) -> None:  # pragma: no cover - child
    """Load the vocabulary once, then compile schemas sent over `conn` until told to stop."""
    import os
    import pickle

    os.nice(10)  # background work: the gateway's event loop keeps the CPU when both want it
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if backend == "outlines":
        import outlines_core
        from outlines_core import json_schema
        from vllm.v1.structured_output.utils import get_outlines_vocabulary

        vocabulary = get_outlines_vocabulary(tokenizer).inner  # type: ignore[arg-type]

        def compile_schema(text: str) -> int:
            index = outlines_core.Index(json_schema.build_regex_from_schema(text), vocabulary)
            return len(pickle.dumps(index))  # the index's transition table, serialised
    else:
        import xgrammar

        info = xgrammar.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
        compiler = xgrammar.GrammarCompiler(info, max_threads=1, cache_enabled=False)

        def compile_schema(text: str) -> int:
            return int(compiler.compile_json_schema(text, any_whitespace=True).memory_size_bytes)

    conn.send(("ready", 0.0, "", 0))
    while True:
        text = conn.recv()
        if text is None:
            return
        started = time.perf_counter()
        try:
            size = compile_schema(text)
            conn.send(("ok", time.perf_counter() - started, "", size))
        except Exception as exc:  # noqa: BLE001 - any failure is the schema's verdict
            conn.send(("error", time.perf_counter() - started, f"{type(exc).__name__}: {exc}"[:500], 0))


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) process `pid` has used, from /proc (None where that cannot be read)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class CompileWorker:
    """A killable child process that compiles schemas like the engine's backend does, and a warm spare.

    One compile at a time (a thread lock: a caller that gave up cannot interleave with the next one on
    the pipe). A compile over its budget kills the worker; the spare, started in the background after
    the first worker (loading the vocabulary took 6–52 s here), takes its place at once, so the next
    request — often another tenant's — never waits for a restart under the lock, and a new spare
    starts behind it. The budget is CPU time of the worker (read from /proc): `timeout` when the
    compile has used it all (the schema is too slow whatever the load), `timeout_busy` when
    WALL_FACTOR times the budget passed before it could (the machine was busy: a verdict that must
    not be remembered)."""

    def __init__(
        self, model_dir: Path, backend: StructuredBackend, *, target: Callable[..., None] | None = None
    ) -> None:
        self._model_dir = model_dir
        self._backend = backend
        self._target = target or _worker_main
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()
        self._spare: tuple[BaseProcess, Connection] | None = None
        self._spare_lock = threading.Lock()
        self._spare_starting = False
        self._closed = False

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def spare_pid(self) -> int | None:
        with self._spare_lock:
            return None if self._spare is None else self._spare[0].pid

    def _spawn(self) -> tuple[BaseProcess, Connection]:
        context = _worker_context()
        parent, child = context.Pipe()
        proc = context.Process(
            target=self._target, args=(child, str(self._model_dir), self._backend), daemon=True,
            name="planstack-schema-compile",
        )  # fmt: skip
        proc.start()
        child.close()
        try:
            ready = parent.poll(WORKER_START_TIMEOUT_S)
            status, _, message, _ = parent.recv() if ready else ("timeout", 0.0, "", 0)
        except (EOFError, OSError):
            status, message = "died", "it exited during start-up"
        if status != "ready":
            proc.kill()
            proc.join(timeout=5)
            parent.close()
            raise RuntimeError(f"the schema compile worker failed to start: {status} {message}".strip())
        return proc, parent

    def _start(self) -> Connection:
        """The spare when one is ready, else a fresh worker (blocking); then a new spare is prepared."""
        with self._spare_lock:
            spare, self._spare = self._spare, None
        if spare is not None and spare[0].is_alive():
            self._proc, self._conn = spare
        else:
            if spare is not None:
                spare[0].kill()
            self._proc, self._conn = self._spawn()
        self._prepare_spare()
        return self._conn

    def _prepare_spare(self) -> None:
        """Start the spare in a background thread (once at a time), never under the compile lock."""
        with self._spare_lock:
            if self._closed or self._spare is not None or self._spare_starting:
                return
            self._spare_starting = True
        threading.Thread(target=self._start_spare, name="planstack-schema-spare", daemon=True).start()

    def _start_spare(self) -> None:
        try:
            spare: tuple[BaseProcess, Connection] | None = self._spawn()
        except RuntimeError as exc:
            logger.warning("the spare schema compile worker did not start: %s", exc)
            spare = None
        with self._spare_lock:
            self._spare_starting = False
            if spare is not None and (self._closed or self._spare is not None):
                spare[0].kill()
            elif spare is not None:
                self._spare = spare

    def compile(self, text: str, timeout_s: float) -> tuple[str, float, str, int]:
        """("ok" | "error" | "timeout" | "timeout_busy" | "crashed", seconds, message, index bytes).
        Blocking: call it from a thread."""
        with self._lock:
            started = time.perf_counter()
            if self._proc is not None and not self._proc.is_alive():
                logger.warning("the schema compile worker (pid %s) had died; starting a new one", self._proc.pid)
                self._reset()
            try:
                conn = self._conn or self._start()
            except RuntimeError as exc:
                return "crashed", time.perf_counter() - started, str(exc), 0
            pid = self._proc.pid if self._proc is not None else None
            cpu_before = cpu_seconds(pid) if pid else None
            try:
                conn.send(text)
                status = self._wait(conn, pid, cpu_before, timeout_s)
                if status is None:
                    status_, seconds, message, size = conn.recv()
                    return status_, seconds, message, size
            except (EOFError, OSError) as exc:  # the worker died under this compile
                logger.warning("the schema compile worker died during a compile (%s)", type(exc).__name__)
                self._reset()
                self._prepare_spare()
                return "crashed", time.perf_counter() - started, "the compile worker stopped", 0
            used = (cpu_seconds(pid) or 0.0) - (cpu_before or 0.0) if pid else 0.0
            self._reset()  # the compile is still running: kill it rather than let it eat the CPU
            self._prepare_spare()
            return status, time.perf_counter() - started, f"{used:.2f} s of CPU", 0

    @staticmethod
    def _wait(conn: Connection, pid: int | None, cpu_before: float | None, budget_s: float) -> str | None:
        """None when the answer is ready; "timeout" once the worker has used `budget_s` of CPU on this
        compile (the schema's own cost, whatever the load); "timeout_busy" when WALL_FACTOR times the
        budget has passed without it having had that much CPU (a busy machine). Without /proc the
        budget is wall time, as the engine's own timeout is."""
        started = time.monotonic()
        while True:
            if conn.poll(0.1):
                return None
            elapsed = time.monotonic() - started
            now = cpu_seconds(pid) if pid and cpu_before is not None else None
            if now is None:
                if elapsed >= budget_s:
                    return "timeout"
                continue
            if now - (cpu_before or 0.0) >= budget_s:
                return "timeout"
            if elapsed >= budget_s * WALL_FACTOR:
                return "timeout_busy"

    def _reset(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(timeout=5)
        if self._conn is not None:
            self._conn.close()
        self._proc, self._conn = None, None

    def close(self) -> None:
        with self._spare_lock:
            self._closed = True
            spare, self._spare = self._spare, None
        if spare is not None:
            spare[0].kill()
            spare[0].join(timeout=5)
            spare[1].close()
        with self._lock:
            self._reset()


class SchemaGuard:
    """Static limits + (for outlines/xgrammar) a time-boxed compile, with verdicts cached by schema
    hash and a bounded queue in front of the compile worker."""

    def __init__(
        self,
        settings: SchemaGuardSettings,
        backend: StructuredBackend,
        metrics: GatewayMetrics,
        worker: CompileWorker | None,
    ) -> None:
        self._settings = settings
        self._backend = backend
        self._metrics = metrics
        self._worker = worker if settings.compile_check and backend in ("outlines", "xgrammar") else None
        self._verdicts: OrderedDict[str, tuple[str | None, int]] = OrderedDict()  # hash → (error or None, bytes)
        self._resident: OrderedDict[str, tuple[int, str]] = OrderedDict()  # mirror of the engine's LRU
        self._lock = asyncio.Lock()  # one compile at a time: this machine has few cores
        self._waiting = 0
        self._waiting_by_tenant: Counter[str] = Counter()

    @property
    def worker_pid(self) -> int | None:
        return None if self._worker is None else self._worker.pid

    def _remember(self, key: str, verdict: str | None, size: int) -> None:
        self._verdicts[key] = (verdict, size)
        while len(self._verdicts) > self._settings.cache_size:
            self._verdicts.popitem(last=False)

    def _cached(self, key: str) -> tuple[bool, str | None, int]:
        if key not in self._verdicts:
            return False, None, 0
        self._verdicts.move_to_end(key)
        self._metrics.schema_checks.labels("cached").inc()
        return True, *self._verdicts[key]

    async def check(self, schema: dict[str, Any], *, tenant: str | None = None) -> None:
        if not self._settings.enabled:
            return
        check_static_limits(schema, self._settings)
        if self._worker is None:
            self._metrics.schema_checks.labels("static_ok").inc()
            return
        text = json.dumps(schema)  # exactly what vLLM compiles (json.dumps of the request's dict)
        key = hashlib.sha256(text.encode()).hexdigest()
        found, verdict, size = self._cached(key)
        if not found:
            verdict, size = await self._queued_compile(key, text, tenant or "")
        if verdict is not None:
            raise SchemaTooComplexError(verdict, param="response_format.json_schema.schema")
        self._admit(key, size, tenant or "")

    def index_usage(self, tenant: str | None = None) -> int:
        """Bytes of grammar index the last `ENGINE_INDEX_CACHE` distinct client schemas hold (one tenant's)."""
        return sum(size for size, owner in self._resident.values() if tenant is None or owner == tenant)

    def _admit(self, key: str, size: int, tenant: str) -> None:
        """Account for the schema's index in the engine's cache; refuse one that would overfill it."""
        if key in self._resident:
            self._resident.move_to_end(key)
            return
        settings = self._settings
        evicted = next(iter(self._resident.values()), (0, "")) if len(self._resident) >= ENGINE_INDEX_CACHE else (0, "")
        total = self.index_usage() - evicted[0] + size
        own = self.index_usage(tenant) - (evicted[0] if evicted[1] == tenant else 0) + size
        if total > settings.index_budget_mib * MIB or own > settings.tenant_index_budget_mib * MIB:
            self._metrics.schema_checks.labels("index_budget").inc()
            whole = total > settings.index_budget_mib * MIB
            held, limit = (total, settings.index_budget_mib) if whole else (own, settings.tenant_index_budget_mib)
            whose = "the recent schemas" if whole else "this tenant's recent schemas"
            raise SchemaTooComplexError(
                f"the engine's memory for compiled client grammars is full: this schema's index is "
                f"{size / MIB:.1f} MiB and {whose} would hold {held / MIB:.0f} MiB of {limit:g} MiB; simplify it "
                "(no bounded string lengths, no free-form objects) or retry once lighter requests have replaced "
                "older grammars",
                param="response_format.json_schema.schema",
            )
        self._resident[key] = (size, tenant)
        while len(self._resident) > ENGINE_INDEX_CACHE:
            self._resident.popitem(last=False)

    async def _queued_compile(self, key: str, text: str, tenant: str) -> tuple[str | None, int]:
        settings = self._settings
        if self._waiting >= settings.max_waiting or self._waiting_by_tenant[tenant] >= settings.max_waiting_per_tenant:
            self._metrics.schema_checks.labels("busy").inc()
            raise RateLimitError(
                "too many new response_format schemas are waiting for their compile check; retry shortly",
                retry_after_s=max(1, math.ceil(settings.compile_timeout_s)),
            )
        self._waiting += 1
        self._waiting_by_tenant[tenant] += 1
        try:
            async with self._lock:
                found, verdict, size = self._cached(key)  # compiled while this request waited
                if found:
                    return verdict, size
                return await self._compile(key, text)
        finally:
            self._waiting -= 1
            self._waiting_by_tenant[tenant] -= 1
            if self._waiting_by_tenant[tenant] <= 0:
                del self._waiting_by_tenant[tenant]

    async def _compile(self, key: str, text: str) -> tuple[str | None, int]:
        assert self._worker is not None
        budget = self._settings.compile_timeout_s
        status, seconds, message, size = await asyncio.to_thread(self._worker.compile, text, budget)
        self._metrics.schema_checks.labels(status).inc()
        logger.info("schema %s… compile check: %s in %.2f s, %.1f MiB", key[:12], status, seconds, size / MIB)
        if status == "crashed":  # not the schema's verdict: nothing is cached
            raise SchemaCheckUnavailableError(
                "the schema compile check is unavailable (its worker stopped and is being restarted); retry",
                retry_after_s=1,
            )
        if status == "timeout_busy":  # the worker did not get its budget of CPU: the load's verdict, not the schema's
            raise SchemaCheckUnavailableError(
                f"the schema's compile check could not finish while the machine was busy ({message} of its "
                f"{budget:g} s budget); retry",
                retry_after_s=max(1, math.ceil(budget)),
            )
        if status == "ok" and size > self._settings.max_index_mib * MIB:
            verdict = (
                f"the schema's grammar index is {size / MIB:.1f} MiB with the {self._backend} backend; the limit "
                f"is {self._settings.max_index_mib:g} MiB (the engine keeps {ENGINE_INDEX_CACHE} of them in memory); "
                "simplify it (no bounded string lengths, no free-form objects)"
            )
        elif status == "ok":
            verdict = None
        elif status == "timeout":
            verdict = (
                f"the schema could not be compiled by the {self._backend} backend within "
                f"{budget:g} s; simplify it (fewer alternatives, no bounded string lengths, "
                "fewer optional fields)"
            )
        else:
            verdict = f"the schema is not supported by the {self._backend} backend: {message}"
        self._remember(key, verdict, size)
        return verdict, size

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()

"""PlannerService: request → validated Plan, with retries, a rule-based fallback and a plan cache.

cache → prompt (system + catalog + retrieved demonstrations + structured intent) → constrained decode
→ validation layers → on failure re-ask with the structured error (≤ max_retries) → fallback planner
→ PlanningFailed. Every result says which path produced it and keeps every attempt.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from planner.cache import PlanCache
from planner.catalog import ToolCatalog
from planner.config import PlannerConfig
from planner.decoding import Decoded, PlanDecoder
from planner.demos import (
    Demonstration,
    DemonstrationSource,
    WordOverlapDemonstrations,
    choose_skeleton,
    usable,
    words,
)
from planner.fallback import FallbackError, FallbackPlanner, FallbackRules
from planner.intent import Intent, IntentExtractor
from planner.llm import LLMError, Message, PlannerLLM
from planner.plan import Plan
from planner.prompts import PromptBook, example_turns
from planner.rules import BusinessRules
from planner.slots import SlotKinds, extract_values
from planner.validation import PlanValidator, ValidationReport

Path_ = Literal["model", "model_retry", "fallback", "cache"]


@dataclass
class Attempt:
    number: int
    raw_text: str
    error: str | None = None
    error_layer: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    calls: int = 0
    decode_s_per_token: float | None = None
    skeleton: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class PlanResult:
    plan: Plan
    path: Path_
    attempts: list[Attempt] = field(default_factory=list)
    validation: ValidationReport | None = None
    timings: dict[str, float] = field(default_factory=dict)
    fallback_reason: str | None = None
    catalog_hash: str = ""
    intent: dict[str, Any] = field(default_factory=dict)

    @property
    def usage(self) -> dict[str, int]:
        prompt = sum(a.prompt_tokens for a in self.attempts)
        completion = sum(a.completion_tokens for a in self.attempts)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def as_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan.model_dump(exclude_none=True),
            "path": self.path,
            "fallback_reason": self.fallback_reason,
            "attempts": [a.as_dict() for a in self.attempts],
            "validation": self.validation.as_dict() if self.validation else None,
            "timings": self.timings,
            "usage": self.usage,
            "catalog_hash": self.catalog_hash,
            "intent": self.intent,
        }


class PlanningFailed(Exception):
    """Neither the model nor the fallback produced a valid plan."""

    retryable = False

    def __init__(self, reason: str, attempts: list[Attempt]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts


class PlannerService:
    def __init__(
        self,
        *,
        llm: PlannerLLM,
        catalog: ToolCatalog,
        config: PlannerConfig,
        prompts: PromptBook,
        fallback_rules: FallbackRules,
        business_rules: list[dict[str, Any]],
        demos: DemonstrationSource | None = None,
        cache: PlanCache | None = None,
    ) -> None:
        self.llm = llm
        self.catalog = catalog
        self.config = config
        self.prompts = prompts
        self.fallback_rules = fallback_rules
        self.business_rules = business_rules
        self.demos = demos
        self.cache = cache
        self.decoder = PlanDecoder(llm, config, prompts)
        self.fallback = FallbackPlanner(fallback_rules, max_nodes=config.max_nodes)
        self.slot_kinds = SlotKinds.from_yaml(config.slots_path)

    @classmethod
    def from_config(
        cls,
        config: PlannerConfig,
        *,
        llm: PlannerLLM,
        catalog: ToolCatalog,
        demos: DemonstrationSource | None = None,
        cache: PlanCache | None = None,
    ) -> PlannerService:
        """Templates and rule files from the paths in `config`; the built-in demonstration index when
        `demos` is None; a cache sized from `config` when `cache` is None."""
        import yaml

        rules = yaml.safe_load(config.rules_path.read_text()) or {}
        if demos is None and config.demonstrations_path.is_file():
            demos = WordOverlapDemonstrations.from_jsonl(config.demonstrations_path)
        return cls(
            llm=llm,
            catalog=catalog,
            config=config,
            prompts=PromptBook(config.prompts_dir, config.prompt_version),
            fallback_rules=FallbackRules.from_yaml(config.fallback_rules_path),
            business_rules=list(rules.get("rules", [])),
            demos=demos,
            cache=cache if cache is not None else PlanCache(ttl_s=config.cache_ttl_s, max_entries=config.cache_size),
        )

    def intent_of(self, request: str) -> Intent:
        extractor = IntentExtractor(
            self.fallback_rules.goals, self.fallback_rules.cities, self.config.effective_today()
        )
        return extractor.extract(request)

    def validator(self, catalog: ToolCatalog) -> PlanValidator:
        rules = BusinessRules(self.business_rules, self.config.effective_today())
        return PlanValidator(catalog, rules, max_nodes=self.config.max_nodes)

    async def plan(
        self, request: str, *, tenant: str, cache_salt: str, tools: list[dict[str, Any]] | None = None
    ) -> PlanResult:
        """Plan over `tools` (OpenAI format; CatalogError when invalid) or the service's catalog."""
        start = time.perf_counter()
        catalog = self.catalog if tools is None else ToolCatalog.from_openai(tools)
        self._check_request(request)
        if self.cache is not None and (cached := self.cache.get(tenant, request, catalog.hash)) is not None:
            return PlanResult(
                cached, "cache", timings={"total_s": time.perf_counter() - start}, catalog_hash=catalog.hash
            )
        result = await self._run(request, catalog, tenant=tenant, cache_salt=cache_salt, extra="")
        if self.cache is not None and result.path in ("model", "model_retry"):
            self.cache.put(tenant, request, catalog.hash, result.plan)
        result.timings["total_s"] = time.perf_counter() - start
        return result

    async def replan(
        self,
        request: str,
        failure_summary: str,
        completed: dict[str, str],
        *,
        tenant: str = "default",
        cache_salt: str | None = None,
    ) -> Plan:
        """The executors' Replanner: plan the remaining work from observation *summaries* only."""
        self._check_request(request)
        summaries = {node: str(summary)[:200] for node, summary in completed.items()}
        extra = self.prompts.replan(summaries, failure_summary)
        result = await self._run(request, self.catalog, tenant=tenant, cache_salt=cache_salt, extra=extra)
        return result.plan

    def _check_request(self, request: str) -> None:
        if not request.strip():
            raise ValueError("the request is empty")
        if len(request) > self.config.request_max_chars:
            raise ValueError(f"the request is longer than {self.config.request_max_chars} characters")

    async def _run(
        self, request: str, catalog: ToolCatalog, *, tenant: str, cache_salt: str | None, extra: str
    ) -> PlanResult:
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        intent = self.intent_of(request)
        demos, skeleton = self._demonstrations(request, intent, catalog, tenant)
        shortlist = self._shortlist(request, demos, catalog)
        demos = usable(demos, shortlist)  # a shortlist cut can leave an example's tool out
        skeleton = skeleton if skeleton in demos else None
        values = extract_values(request, intent, self.slot_kinds) if self.config.grammar.intent_values else None
        base = self._messages(request, intent, shortlist, demos)
        while len(demos) > 1 and sum(len(m["content"]) for m in base) > self.config.prompt_max_chars:
            demos = demos[1:]  # the farthest first (the skeleton, if any, is the nearest: kept)
            base = self._messages(request, intent, shortlist, demos)
        timings["prompt_s"] = time.perf_counter() - t0
        validator = self.validator(catalog)
        attempts: list[Attempt] = []
        feedback = ""
        report: ValidationReport | None = None
        decode_s = validate_s = 0.0
        for number in range(1, self.config.max_retries + 2):
            messages = [*base[:-1], {"role": "user", "content": base[-1]["content"] + extra + feedback}]
            t1 = time.perf_counter()
            try:
                decoded = await self.decoder.decode(
                    messages, shortlist, cache_salt=cache_salt, values=values, skeleton=skeleton
                )
            except LLMError as exc:
                attempts.append(Attempt(number, "", f"{type(exc).__name__}: {exc}", "engine"))
                decode_s += time.perf_counter() - t1
                if not exc.retryable:
                    break
                continue
            decode_s += time.perf_counter() - t1
            attempt = _attempt(number, decoded)
            attempts.append(attempt)
            if decoded.error is not None:
                attempt.error, attempt.error_layer = str(decoded.error), "schema"
                feedback = self.prompts.repair(
                    decoded.raw_text,
                    json.dumps(
                        {"layer": "schema", "errors": [{"code": "invalid_json", "message": str(decoded.error)}]}
                    ),
                )
                continue
            t2 = time.perf_counter()
            report = validator.validate(decoded.candidate or {})
            validate_s += time.perf_counter() - t2
            if report.ok and report.plan is not None:
                timings.update(decode_s=decode_s, validate_s=validate_s)
                return PlanResult(
                    report.plan,
                    "model" if number == 1 else "model_retry",
                    attempts,
                    report,
                    timings,
                    catalog_hash=catalog.hash,
                    intent=intent.as_dict(),
                )
            error = report.error
            attempt.error = error.feedback() if error else "invalid plan"
            attempt.error_layer = error.layer if error else None
            feedback = self.prompts.repair(json.dumps(decoded.candidate), error.feedback() if error else "")
        timings.update(decode_s=decode_s, validate_s=validate_s)
        reason = attempts[-1].error if attempts else "no attempt"
        return self._fallback(request, intent, catalog, validator, attempts, timings, reason or "unknown")

    def _fallback(
        self,
        request: str,
        intent: Intent,
        catalog: ToolCatalog,
        validator: PlanValidator,
        attempts: list[Attempt],
        timings: dict[str, float],
        reason: str,
    ) -> PlanResult:
        if not self.config.fallback_enabled:
            raise PlanningFailed(f"model path failed: {reason}", attempts)
        t0 = time.perf_counter()
        try:
            plan = self.fallback.plan(request, intent, catalog)
        except FallbackError as exc:
            raise PlanningFailed(f"model path failed ({reason}); fallback: {exc}", attempts) from exc
        report = validator.validate(plan)
        timings["fallback_s"] = time.perf_counter() - t0
        if not report.ok:
            raise PlanningFailed(f"model path failed ({reason}); fallback plan invalid: {report.error}", attempts)
        return PlanResult(
            plan,
            "fallback",
            attempts,
            report,
            timings,
            fallback_reason=reason,
            catalog_hash=catalog.hash,
            intent=intent.as_dict(),
        )

    def _demonstrations(
        self, request: str, intent: Intent, catalog: ToolCatalog, tenant: str
    ) -> tuple[list[Demonstration], Demonstration | None]:
        """The examples (farthest first) and the skeleton: a demonstration whose structure is reused."""
        if self.demos is None or self.config.demonstrations_k == 0:
            return [], None
        found = usable(self.demos.search(request, max(8, self.config.demonstrations_k * 4), tenant=tenant), catalog)
        skeleton = choose_skeleton(
            found,
            self.fallback.tools_for(intent, catalog),
            min_score=self.config.skeleton_min_score,
            agree_score=self.config.skeleton_agree_score,
        )
        demos = found[: self.config.demonstrations_k]
        if skeleton is not None and skeleton not in demos:
            demos = [skeleton, *demos[: self.config.demonstrations_k - 1]]
        elif skeleton is not None:
            demos = [skeleton, *(d for d in demos if d is not skeleton)]
        demos.reverse()  # the nearest example (the skeleton, when there is one) right before the request
        return demos, skeleton

    def _shortlist(self, request: str, demos: list[Demonstration], catalog: ToolCatalog) -> ToolCatalog:
        """The whole catalog when small; else demo tools + best word overlap with the request."""
        limit = self.config.prompt_max_tools
        if len(catalog) <= limit:
            return catalog
        chosen = list(dict.fromkeys(t for d in reversed(demos) for t in d.tools() if t in catalog))[:limit]
        query = words(request)
        ranked = sorted(
            catalog,
            key=lambda t: -len(query & words(re.sub(r"([a-z])([A-Z])|[._]", r"\1 \2", t.name) + " " + t.description)),
        )
        for tool in ranked:
            if len(chosen) >= limit:
                break
            if tool.name not in chosen:
                chosen.append(tool.name)
        return catalog.subset([name for name in catalog.names() if name in chosen])

    def _messages(
        self, request: str, intent: Intent, catalog: ToolCatalog, demos: list[Demonstration]
    ) -> list[Message]:
        oneshot = self.config.strategy != "staged"
        turns = example_turns(
            self.prompts,
            demos,
            [self.intent_of(d.request) for d in demos],
            catalog,
            oneshot=oneshot,
            optional_args=self.config.grammar.optional_args,
        )
        return [
            {"role": "system", "content": self.prompts.system(catalog)},
            *turns,
            {"role": "user", "content": self.prompts.request(request, intent, oneshot=oneshot)},
        ]


def _attempt(number: int, decoded: Decoded) -> Attempt:
    return Attempt(
        number=number,
        raw_text=decoded.raw_text,
        prompt_tokens=decoded.prompt_tokens,
        completion_tokens=decoded.completion_tokens,
        latency_s=round(decoded.latency_s, 4),
        calls=len(decoded.calls),
        decode_s_per_token=decoded.decode_s_per_token,
        skeleton=decoded.skeleton,
    )


def catalog_from_file(path: Any) -> ToolCatalog:
    """A catalog from an OpenAI-format tools JSON file (e.g. configs/planner/demo_catalog.json)."""
    from pathlib import Path

    return ToolCatalog.from_openai(json.loads(Path(path).read_text()))


def demo_catalog() -> ToolCatalog:
    """The travel/meeting demo catalog: the executors' registry when importable, else the catalog file."""
    try:
        from executors.tools import default_registry
    except ImportError:
        default_registry = None  # type: ignore[assignment]
    if default_registry is not None:
        registry = default_registry()
        tools = []
        for spec in registry.catalog():
            tool = spec.openai_tool()
            tool["function"]["output_schema"] = spec.output_schema  # the planstack extension: referencable fields
            tools.append(tool)
        return ToolCatalog.from_openai(tools)
    else:
        from planner.config import CONFIG_DIR

        return catalog_from_file(CONFIG_DIR / "planner" / "demo_catalog.json")


__all__ = ["Attempt", "PlanResult", "PlannerService", "PlanningFailed", "catalog_from_file", "demo_catalog"]

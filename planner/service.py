"""PlannerService: request → validated Plan (or an explicit "no plan"), for any tool catalog.

cache → values in the request, steps and an embedding tool proposal → demonstrations (tenant, packs)
→ prompt → staged, grammar-constrained decode → validation layers → on failure a re-ask that changes
what caused it → rule-based fallback (a pack's, else the proposal filled with request values) →
PlanningFailed. Engine outages are not planning failures: `LLMUnavailable` / `LLMTimeout` propagate
(the gateway answers 503 / 504). Every result says which path produced it and keeps every attempt.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from contract.demonstrations import Demonstration, DemonstrationSource
from contract.plan import Plan
from planner.ambient import ambient_parameters
from planner.answers import attempt_record, needs_input_result, refused_own_values
from planner.cache import PlanCache
from planner.catalog import ToolCatalog
from planner.config import Grounding, PlannerConfig
from planner.dataflow import LearnedRule, References, learn_references
from planner.decoding import Decoded, PlanDecoder
from planner.demos import EmbeddingDemonstrations, choose_skeleton, usable
from planner.fallback import fallback_result
from planner.flat_args import flat_catalog, flat_demo, nest_plan
from planner.lexicon import lexicon
from planner.llm import LLMError, LLMRejected, Message, PlannerLLM
from planner.nodes import NodeTurns, PreparedRequest
from planner.packs import DomainPack, load_packs
from planner.prompts import COMPACT_LEVELS, PromptBook, example_turns, prompt_chars
from planner.results import Attempt, InvalidPlanningRequest, Path_, PlanningFailed, PlanResult
from planner.retries import RetryPlan
from planner.rules import BusinessRules
from planner.selection import ToolSelector
from planner.selectors import complete_plan
from planner.similarity import CachedEmbedder, HashingEmbedder, TextEmbedder
from planner.transfer import carry_values, template
from planner.validation import PlanValidator, ValidationReport
from planner.values import extract

NODE_TURN_CHARS = 650  # a node's prompt (step, values, earlier outputs, draft) and answer, measured on NESTFUL


class PlannerService:
    def __init__(
        self,
        *,
        llm: PlannerLLM,
        catalog: ToolCatalog,
        config: PlannerConfig,
        prompts: PromptBook,
        packs: Sequence[DomainPack] = (),
        demos: DemonstrationSource | None = None,
        cache: PlanCache | None = None,
        embedder: TextEmbedder | None = None,
    ) -> None:
        self.llm = llm
        self.catalog = catalog
        self.config = config
        self.prompts = prompts
        self.packs = list(packs)
        self.demos = demos
        self.cache = cache
        self.embedder = (
            embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder or HashingEmbedder())
        )
        self.decoder = PlanDecoder(llm, config, prompts)
        self.selector = ToolSelector(self.embedder, config.selection)
        self._pack_demos = {
            pack.name: EmbeddingDemonstrations(pack.demonstrations(), self.embedder) for pack in self.packs
        }
        self._flat: dict[str, ToolCatalog] = {}  # catalog hash → its flat views (planner/flat_args.py)

    @classmethod
    def from_config(
        cls,
        config: PlannerConfig,
        *,
        llm: PlannerLLM,
        catalog: ToolCatalog,
        demos: DemonstrationSource | None = None,
        cache: PlanCache | None = None,
        embedder: TextEmbedder | None = None,
    ) -> PlannerService:
        """Templates from `config.prompts_dir`, packs from `config.packs`, a cache sized from `config`."""
        return cls(
            llm=llm,
            catalog=catalog,
            config=config,
            prompts=PromptBook(config.prompts_dir, config.prompt_version),
            packs=load_packs(config.packs),
            demos=demos,
            cache=cache if cache is not None else PlanCache(ttl_s=config.cache_ttl_s, max_entries=config.cache_size),
            embedder=embedder,
        )

    # public --------------------------------------------------------------------------------
    def packs_for(self, catalog: ToolCatalog) -> list[DomainPack]:
        return [pack for pack in self.packs if pack.applies(catalog)]

    def validator(self, catalog: ToolCatalog) -> PlanValidator:
        """Schema → DAG → arguments → the business rules of the packs that apply to `catalog`."""
        rules = [rule for pack in self.packs_for(catalog) for rule in pack.business_rules()]
        return PlanValidator(
            catalog, BusinessRules(rules, self.config.effective_today()), max_nodes=self.config.max_nodes
        )

    def cache_key_extra(self) -> str:
        return f"{self.config.fingerprint()}:{self.config.prompt_version}:{self.config.effective_today()}"

    async def plan(
        self,
        request: str,
        *,
        tenant: str,
        cache_salt: str,
        tools: list[dict[str, Any]] | ToolCatalog | None = None,
    ) -> PlanResult:
        """Plan over `tools` (OpenAI format, CatalogError when invalid; or a catalog already checked) or
        the service's catalog."""
        start = time.perf_counter()
        catalog = self.catalog if tools is None else tools
        if not isinstance(catalog, ToolCatalog):
            catalog = ToolCatalog.from_openai(catalog)
        self._check_request(request)
        extra = self.cache_key_extra()
        if self.cache is not None and (cached := self.cache.get(tenant, request, catalog.hash, extra)) is not None:
            return PlanResult(
                cached, "cache", timings={"total_s": time.perf_counter() - start}, catalog_hash=catalog.hash
            )
        result = await self._run(request, catalog, tenant=tenant, cache_salt=cache_salt, extra="")
        if self.cache is not None and result.plan is not None and result.path in ("model", "model_retry"):
            self.cache.put(tenant, request, catalog.hash, result.plan, extra)
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
        tools: list[dict[str, Any]] | None = None,
    ) -> Plan:
        """The executors' Replanner: plan the remaining work from observation *summaries* only, over
        `tools` (a run's own catalog, OpenAI format) or the service's catalog."""
        self._check_request(request)
        summaries = {node: str(summary)[:200] for node, summary in completed.items()}
        extra = self.prompts.replan(summaries, failure_summary)
        catalog = self.catalog if tools is None else ToolCatalog.from_openai(tools)
        result = await self._run(request, catalog, tenant=tenant, cache_salt=cache_salt, extra=extra)
        if result.plan is None:
            raise PlanningFailed(result.reason or "no tool fits the remaining work", result.attempts)
        return result.plan

    # pipeline ------------------------------------------------------------------------------
    def _check_request(self, request: str) -> None:
        if not request.strip():
            raise InvalidPlanningRequest("the request is empty")
        if len(request) > self.config.request_max_chars:
            raise InvalidPlanningRequest(f"the request is longer than {self.config.request_max_chars} characters")

    def flat_views(self, catalog: ToolCatalog) -> ToolCatalog:
        """The catalog planned field by field (planner/flat_args.py), kept for the latest catalogs."""
        flat = self._flat.get(catalog.hash)
        if flat is None:
            flat = flat_catalog(catalog)
            if len(self._flat) >= 64:
                self._flat.pop(next(iter(self._flat)))
            self._flat[catalog.hash] = flat
        return flat

    async def _prepare(self, request: str, given: ToolCatalog, tenant: str) -> PreparedRequest:
        """`given`: the catalog as the client sent it; planned through its flat views."""
        catalog = self.flat_views(given)
        today = self.config.effective_today()
        packs = self.packs_for(catalog)
        values = extract(request, today)
        selection = await self.selector.select(
            request, catalog, limit=self.config.prompt_max_tools, values=values, lookups=self.config.stages.lookups
        )
        demos, skeleton, references = await self._demonstrations(request, catalog, packs, tenant, selection.sequence)
        shortlist = selection.shortlist
        wanted = [t for d in usable(demos, catalog) for t in d.tools() if t not in shortlist]
        if wanted:  # a usable demonstration's tools are strong evidence: keep them in the prompt
            names = set(shortlist.names()) | set(wanted)
            selection.shortlist = catalog.subset([n for n in catalog.names() if n in names])
        carried = carry_values(skeleton, values, today, catalog) if skeleton is not None else []
        return PreparedRequest(
            request,
            catalog,
            values,
            selection,
            packs,
            demos,
            skeleton,
            tenant,
            references,
            carried,
            given=given,
            ambient=ambient_parameters(catalog, lexicon("en")),
        )

    async def _run(
        self, request: str, catalog: ToolCatalog, *, tenant: str, cache_salt: str | None, extra: str
    ) -> PlanResult:
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        req = await self._prepare(request, catalog, tenant)
        timings["prepare_s"] = time.perf_counter() - t0
        described = req.selection.describe()
        pack_names = [p.name for p in req.packs]
        if req.selection.no_fit and req.skeleton is None:
            reason = (
                f"no tool in the catalog fits the request (best similarity {req.selection.best_score:.2f} < "
                f"{self.config.selection.no_fit_below})"
            )
            return PlanResult(None, "no_plan", [], None, timings, None, catalog.hash, reason, described, pack_names)
        if self.config.stages.needs_input:
            given, _ = NodeTurns(req, self.config, RetryPlan(self.config.grounding), None).tools_given()
            missing = NodeTurns(req, self.config, RetryPlan(self.config.grounding), None).missing(given or [])
            if missing:
                return needs_input_result(req, missing, [], timings, described, pack_names)
        validator = self.validator(catalog)
        attempts: list[Attempt] = []
        plan_try = RetryPlan(self.config.grounding)
        report: ValidationReport | None = None
        decode_s = validate_s = 0.0
        for number in range(1, self.config.max_retries + 2):
            t1 = time.perf_counter()
            try:
                decoded = await self._decode(req, plan_try, cache_salt, extra)
            except LLMRejected as exc:
                attempts.append(Attempt(number, "", f"{type(exc).__name__}: {exc}", "engine", changes=plan_try.changes))
                decode_s += time.perf_counter() - t1
                plan_try = plan_try.after_refusal(str(exc))
                continue
            decode_s += time.perf_counter() - t1
            attempt = attempt_record(number, decoded, plan_try)
            attempts.append(attempt)
            if decoded.empty:
                timings.update(decode_s=decode_s)
                reason = (
                    "the model chose no tool: none of the catalog's tools fits the request"
                    if decoded.tools_from == "model"
                    else f"the {decoded.tools_from} has no tool for the request: none of the catalog's tools fits it"
                )
                return PlanResult(
                    None, "no_plan", attempts, None, timings, None, catalog.hash, reason, described, pack_names
                )
            if decoded.error is not None:
                attempt.error, attempt.error_layer = str(decoded.error), "schema"
                feedback = json.dumps(
                    {"layer": "schema", "errors": [{"code": "invalid_json", "message": str(decoded.error)}]}
                )
                plan_try = plan_try.after_bad_json(self.prompts.repair(decoded.raw_text, feedback))
                continue
            t2 = time.perf_counter()
            candidate = nest_plan(decoded.candidate or {}, req.catalog)  # as the catalog declares its objects
            candidate = complete_plan(candidate, req.given or req.catalog)  # `part`: the parts written
            report = validator.validate(candidate)
            validate_s += time.perf_counter() - t2
            if report.ok and report.plan is not None:
                timings.update(decode_s=decode_s, validate_s=validate_s)
                path: Path_ = "model" if number == 1 else "model_retry"
                return PlanResult(
                    report.plan, path, attempts, report, timings, None, catalog.hash, None, described, pack_names
                )
            error = report.error
            attempt.error = error.feedback() if error else "invalid plan"
            attempt.error_layer = error.layer if error else None
            refused = refused_own_values(candidate, report, req.values)
            if refused and self.config.stages.needs_input:  # never silently change what the user wrote
                timings.update(decode_s=decode_s, validate_s=validate_s)
                return needs_input_result(req, refused, attempts, timings, described, pack_names)
            repair = self.prompts.repair(json.dumps(decoded.candidate), error.feedback() if error else "")
            plan_try = plan_try.after_invalid_plan(decoded.candidate or {}, report, req.values, repair)
        timings.update(decode_s=decode_s, validate_s=validate_s)
        last_error = attempts[-1].error if attempts else "no attempt"
        return fallback_result(req, validator, self.config, attempts, timings, last_error or "unknown", described)

    async def _decode(self, req: PreparedRequest, plan_try: RetryPlan, cache_salt: str | None, extra: str) -> Decoded:
        config = self.config
        shortlist = req.selection.shortlist
        demos = req.demos if plan_try.examples else []  # examples make the longest prompts (context limit)
        if config.strategy != "staged":
            messages = self._messages(req, demos, oneshot=True, extra=extra + plan_try.feedback)
            grammar = None if config.strategy == "unconstrained" else config.strategy
            return await self.decoder.one_call(messages, shortlist, cache_salt=cache_salt, grammar=grammar)
        messages = self._messages(
            req,
            demos,
            oneshot=False,
            extra=extra + plan_try.feedback,
            grounding=plan_try.grounding,
            plan_level=plan_try.compact,
        )
        rule = self._learned_rule() if plan_try.use_skeleton else None  # a retry drops learned structure too
        turns = NodeTurns(req, config, plan_try, rule)
        given, given_by = turns.tools_given()
        return await self.decoder.staged(
            messages, shortlist, turns, cache_salt=cache_salt, given_tools=given, given_by=given_by
        )

    def _messages(
        self,
        req: PreparedRequest,
        demos: list[Demonstration],
        *,
        oneshot: bool,
        extra: str,
        grounding: Grounding = "free",
        plan_level: int = 0,
    ) -> list[Message]:
        shortlist = req.selection.shortlist
        listed = req.given_tools(shortlist.names())  # the tools as the client declared them
        stages = self.config.stages
        hints = stages.step_hints
        steps = [(h.step.text, h.tool if hints else None) for h in req.selection.hints]
        intent: dict[str, Any] = {}
        for pack in req.packs if stages.pack_intent else []:
            intent.update(pack.intent(req.text, self.config.effective_today()))
        kept, level = list(demos), plan_level
        while True:
            turns = example_turns(
                self.prompts, kept, shortlist, oneshot=oneshot, optional_args=self.config.grammar.optional_args
            )
            request_turn = self.prompts.request(req.text, steps, intent=intent, oneshot=oneshot)
            if stages.proposal_line and not oneshot and req.selection.sequence != [t for _, t in steps if t]:
                request_turn += "\nProposed tools: " + json.dumps(req.selection.sequence)
            messages: list[Message] = [
                {"role": "system", "content": self.prompts.system(listed, grounding=grounding, level=level)},
                *turns,
                {"role": "user", "content": request_turn + extra},
            ]
            # the staged decoder appends two turns per node (its step, values, draft and its answer)
            growth = NODE_TURN_CHARS * max(
                1, len(req.skeleton.tools()) if req.skeleton else len(req.selection.sequence)
            )
            total = sum(prompt_chars(m["content"]) for m in messages) + (0 if oneshot else growth)
            if total <= self.config.prompt_max_chars or (not kept and level >= COMPACT_LEVELS - 1):
                return messages
            if kept:
                kept = kept[1:]  # the farthest first (the skeleton, if any, is the nearest: kept)
            else:
                level += 1  # no example left: shorter tool lines

    def _learned_rule(self) -> LearnedRule | None:
        config = self.config
        if not config.stages.learned_refs or config.learned_refs_min_count is None or config.learned_refs_fetch == 0:
            return None
        return LearnedRule(config.learned_refs_min_count, config.learned_refs_min_rate)

    async def _demonstrations(
        self, request: str, catalog: ToolCatalog, packs: list[DomainPack], tenant: str, proposal: Sequence[str] = ()
    ) -> tuple[list[Demonstration], Demonstration | None, References]:
        """The examples (farthest first), the skeleton (a demonstration whose structure is reused) and the
        data flow learned from the nearest `learned_refs_fetch` demonstrations of each source."""
        k = self.config.demonstrations_k
        if k == 0:
            return [], None, {}
        sources: list[DemonstrationSource] = [self._pack_demos[p.name] for p in packs]
        if self.demos is not None:
            sources.insert(0, self.demos)
        fetch = max(8, k * 4)
        learn = self.config.learned_refs_fetch if self._learned_rule() is not None else 0
        found: list[Demonstration] = []
        nearest: list[Demonstration] = []
        for source in sources:
            hits = await asyncio.to_thread(source.search, request, max(fetch, learn), tenant=tenant)
            hits = [flat_demo(d, catalog) for d in hits]  # field by field, as the catalog is planned
            found += hits[:fetch]
            nearest += hits[:learn]
        found.sort(key=lambda d: -d.score)
        own = usable(found, catalog)
        written = own  # scored on the requests as written
        repeats: list[Demonstration] = []  # the same request with other values (templates alike)
        if self.config.stages.value_transfer and own:  # same shape, other values: compare the templates too
            own, repeats = await self._by_template(request, own)
        expected: set[str] = set()
        for pack in packs:
            expected |= pack.expected_tools(request, catalog, self.config.effective_today())
        if not expected and self.config.skeleton_agree_proposal:  # no pack has an opinion: the proposal's tools
            expected = set(proposal)
        skeleton = None
        if self.config.stages.skeletons:  # a structure the expected tools agree with, by shape (templates too);
            # one copied whatever is expected only for a near-repeat of the request as written: "Refund <amount>
            # of payment <id>" and "Capture <amount> on payment <id>" share a shape, not their tools
            skeleton = choose_skeleton(own, expected, min_score=None, agree_score=self.config.skeleton_agree_score)
            skeleton = skeleton or choose_skeleton(
                written, set(), min_score=self.config.skeleton_min_score, agree_score=None
            )
            skeleton = skeleton or (repeats[0] if repeats else None)
        demos = (found if self.config.demonstrations_foreign else own)[:k]
        if skeleton is not None:
            demos = [skeleton, *(d for d in demos if d is not skeleton)][:k]
        demos.reverse()  # the nearest example (the skeleton, when there is one) right before the request
        return demos, skeleton, learn_references(nearest, catalog)

    async def _by_template(
        self, request: str, demos: list[Demonstration]
    ) -> tuple[list[Demonstration], list[Demonstration]]:
        """`demos` scored by the better of their cosine and their template's cosine with the request's
        (planner/transfer.py: values masked), nearest first; and those whose template is a near-repeat of
        the request's (at least `skeleton_repeat_score`), nearest first."""
        today = self.config.effective_today()
        texts = [template(extract(request, today)), *(template(extract(d.request, today)) for d in demos)]
        vectors = await self.embedder.aembed(texts)
        scores = [float(s) for s in vectors[1:] @ vectors[0]]
        rescored = [replace(d, score=round(max(d.score, s), 4)) for d, s in zip(demos, scores, strict=True)]
        bound = self.config.skeleton_repeat_score
        repeats = [(s, d) for d, s in zip(rescored, scores, strict=True) if bound is not None and s >= bound]
        repeats.sort(key=lambda pair: -pair[0])
        return sorted(rescored, key=lambda d: -d.score), [d for _, d in repeats]


__all__ = [
    "Attempt",
    "LLMError",
    "PlanResult",
    "PlannerService",
    "PlanningFailed",
]

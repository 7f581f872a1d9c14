"""Which tools a request needs: an embedding shortlist and a proposed tool per step.

1. Every tool is scored by cosine similarity of its text (name in words + description) with the
   whole request and with each step (planner/steps.py); its score is the best of those. The shortlist
   is the best `limit` tools (the model and the grammar see only these; validation sees the catalog).
2. Each step is given its best tool when that similarity is at least `step_min`; a tool already given
   to an earlier step yields to the step's runner-up when the runner-up is within `repeat_margin`
   (plans rarely call one tool twice, but still can). A step still given an earlier step's tool is
   scored again without the words it shares with those steps: "then calculate the square of the
   monthly mortgage payment" only names the earlier result, and the rest fits another tool
   (`repeat_mask`); a verbless step left with a repeat joins the step before it.
3. Data flow adds prerequisites (planner/prerequisites.py): a proposed tool whose required arguments are
   mostly fields that only another shortlisted tool outputs gets that tool before it, and a required
   identifier the request only names ("invoice ACME": `customerId`) gets the lookup that returns it
   (planner/lookups.py: output schemas in any naming style, else descriptions), found in the whole
   catalog; the lookup joins the shortlist.
4. When no step reaches `no_fit_below`, nothing in the catalog fits the request.

The proposal is shown to the model as a hint (it still decides; the grammar allows every shortlisted
tool and any plan length) and is what the generic fallback planner plans with.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from planner.arg_options import ArgOptions
from planner.argkinds import ordered_tokens
from planner.catalog import ToolCatalog, ToolDef
from planner.config import SelectionConfig
from planner.evidence import NodeEvidence
from planner.fit import (
    deprecated_fit,
    name_fit,
    named_parameters,
    names_a_parameter,
    option_fit,
    parameter_fit,
    value_fit,
)
from planner.lexicon import lexicon, lexicon_for
from planner.lookups import is_lookup, name_verbs, producers
from planner.prerequisites import Gap, Lookup, with_prerequisites
from planner.similarity import CachedEmbedder
from planner.steps import Step, follows_connective, split_steps, tool_verb
from planner.values import RequestValues, extract


@dataclass(frozen=True)
class StepHint:
    step: Step
    tool: str | None
    score: float


@dataclass
class Selection:
    shortlist: ToolCatalog
    steps: list[Step]
    hints: list[StepHint]
    sequence: list[str]
    best_score: float
    scores: dict[str, float] = field(default_factory=dict)
    step_scores: dict[str, list[float]] = field(default_factory=dict)  # tool → similarity per step
    no_fit: bool = False
    lookups: list[Lookup] = field(default_factory=list)  # lookups of the sequence (node indexes in it)
    gaps: list[Gap] = field(default_factory=list)  # identifiers of the sequence nothing can fill
    node_steps: list[Step | None] = field(default_factory=list)  # the step of each node of the sequence

    def step_for(self, index: int, tool: str, tools: list[str]) -> Step | None:
        """The step node `index` (0-based) of tool `tool` came from: for the proposed sequence, its own
        step (a lookup's is the step of the node it serves); else the k-th step proposing that tool, else
        the step most similar to the tool."""
        if list(tools) == self.sequence and index < len(self.node_steps):
            return self.node_steps[index]
        nth = tools[:index].count(tool)
        proposing = [h.step for h in self.hints if h.tool == tool]
        if nth < len(proposing):
            return proposing[nth]
        per_step = self.step_scores.get(tool)
        if not per_step or not self.steps:
            return None
        return self.steps[int(np.argmax(per_step))]

    def describe(self) -> dict[str, object]:
        return {
            "steps": [h.step.text for h in self.hints],
            "proposed": self.sequence,
            "best_score": round(self.best_score, 3),
            "no_fit": self.no_fit,
            "shortlist": self.shortlist.names(),
            **({"lookups": [vars(lookup) for lookup in self.lookups]} if self.lookups else {}),
            **({"gaps": [vars(gap) for gap in self.gaps]} if self.gaps else {}),
        }


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) > 2}


def _writes_name_of(step: Step, tool: str) -> bool:
    """The step writes a word of the tool's name but its verb: the same stem, or the same first five letters
    ("invite" for `invitations_create`, "announce" for `announcements_create`)."""
    lex = lexicon_for(step.text)
    verbs = name_verbs(tool, lexicon("en"))
    named = [w for w in re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", tool).lower()) if w not in verbs]
    for said in _words(lex.glossed(step.text)):
        for word in named:
            if lex.stem(said) == lex.stem(word) or (min(len(said), len(word)) >= 5 and said[:5] == word[:5]):
                return True
    return False


def _with_toolless_tails(request: str, hints: list[StepHint]) -> list[StepHint]:
    """The hints that propose a tool, each step extended over the tool-less steps right after it ("...,
    subject 'Hi', text 'See you'": values of the same call)."""
    out: list[StepHint] = []
    for hint in hints:
        if hint.tool:
            out.append(hint)
        elif out:
            last = out[-1]
            step = Step(request[last.step.start : hint.step.end], last.step.start, hint.step.end, last.step.implicit)
            out[-1] = StepHint(step, last.tool, last.score)
    return out


def _fit(request: str, values: RequestValues, steps: list[Step], catalog: ToolCatalog) -> np.ndarray:
    """Name and value fit of every (step, tool) pair (planner/fit.py): tens of milliseconds for a catalog
    of a hundred real tools, so it runs in a worker thread."""
    fits = name_fit(request, steps, catalog) + value_fit(values, steps, catalog) + option_fit(request, steps, catalog)
    return fits + parameter_fit(request, steps, catalog) + deprecated_fit(steps, catalog)


def _join_argument_steps(
    request: str, hints: list[StepHint], catalog: ToolCatalog, values: RequestValues
) -> list[StepHint]:
    """A step given the same tool as the step before it (tool-less steps between), that writes one of that
    tool's parameter names, gives that call another argument ("…, and add priya@example.com as an
    attendee"): it joins that step, with the steps between. So does one given the same lookup that gives
    no value but a count ("Search my mail for 'invoice 4471' and show at most 10 messages")."""
    out: list[StepHint] = []
    for hint in hints:
        at = next((k for k in range(len(out) - 1, -1, -1) if out[k].tool is not None), -1)  # tool-less between
        last = out[at] if at >= 0 else None
        same = last is not None and hint.tool is not None and hint.tool == last.tool and hint.tool in catalog
        tool = catalog.get(str(hint.tool)) if same else None
        if (
            same
            and last is not None
            and tool is not None
            and (names_a_parameter(request, hint.step, tool) or _more_of_a_lookup(hint.step, tool, values))
        ):
            start, end = last.step.start, hint.step.end
            out[at:] = [StepHint(Step(request[start:end], start, end, last.step.implicit), last.tool, last.score)]
            continue
        out.append(hint)
    return out


def _consumers_over_lookups(
    request: str,
    steps: list[Step],
    hints: list[StepHint],
    per_step: np.ndarray,
    names: list[str],
    allowed: set[str],
    catalog: ToolCatalog,
    values: RequestValues,
    margin: float,
) -> list[StepHint]:
    """A step whose best tool only looks something up, while a tool within `margin` of it takes that
    lookup's output and more of what the step gives, asks for the second ("Render frame 1:2 of file … as a
    PNG the way it looked in the most recent saved version": `getImages`, whose `version` the versions list
    returns; "mark that recommendation as 'have it'": the rating, not the list). The lookup stays before it
    when it feeds an optional argument the step names (the version); one a required identifier needs is
    found again by the prerequisites."""
    lex = lexicon("en")
    out: list[StepHint] = []
    rows = {step.start: i for i, step in enumerate(steps)}
    for hint in hints:
        found, row = None, rows.get(hint.step.start)
        lookup = catalog.get(hint.tool) if hint.tool is not None else None
        if lookup is not None and row is not None and is_lookup(lookup, lex):
            found = _consumer_of(request, hint, per_step[row], names, allowed, catalog, values, margin, lookup)
        out.extend(found or [hint])
    return out


def _consumer_of(
    request: str,
    hint: StepHint,
    row: np.ndarray,
    names: list[str],
    allowed: set[str],
    catalog: ToolCatalog,
    values: RequestValues,
    margin: float,
    lookup: ToolDef,
) -> list[StepHint] | None:
    lex = lexicon("en")
    span = (hint.step.start, hint.step.end)
    base = _given(NodeEvidence(values, span, []).node(lookup))
    for j in np.argsort(-row, kind="stable"):
        tool = catalog.get(names[j])
        if float(row[j]) < hint.score - margin:
            return None
        if tool is None or tool.name == lookup.name or tool.name not in allowed:
            continue
        if not is_lookup(tool, lex) and not _says_verb_of(hint.step, tool):
            continue  # "Which shared drives have Finance in the name?" does not create one
        fed = [a for a in tool.properties if any(p.tool == lookup.name for p in producers(tool, a, catalog))]
        if not fed or _given(NodeEvidence(values, span, []).node(tool)) <= base:
            continue
        named = set(named_parameters(request, hint.step, tool))
        consumer = StepHint(hint.step, tool.name, float(row[j]))
        if any(a in named and a not in tool.required for a in fed):
            return [hint, consumer]
        return [consumer]
    return None


def _says_verb_of(step: Step, tool: ToolDef) -> bool:
    """The step writes a verb of the tool's name or one of its synonyms (the lexicon's `verb_synonyms`),
    and does not open with a verb that looks things up ("Show my notes updated since …" changes nothing)."""
    lex, en = lexicon_for(step.text), lexicon("en")
    words = re.findall(r"[a-z]+", lex.glossed(step.text).lower())
    finding = en.lookup_verbs | {x for v in en.lookup_verbs for x in en.verb_synonyms.get(v, ())}
    if words and words[0] in finding - en.mutating_verbs:
        return False
    said = {en.stem(w) for w in words}
    verbs = name_verbs(tool.name, en)
    return any({en.stem(x) for x in (v, *en.verb_synonyms.get(v, ()))} & said for v in verbs)


def _given(node: dict[str, ArgOptions]) -> int:
    """How many arguments the request gives a value for (not its defaults, not a lookup's output)."""
    return sum(1 for options in node.values() if options.values and options.supported)


def _more_of_a_lookup(step: Step, tool: ToolDef, values: RequestValues) -> bool:
    """The tool's name says it lists or finds things and the step gives it nothing but a number (how many
    to show; "then calculate the square of the payment" gives none and is a step of its own)."""
    lex = lexicon("en")
    given = [c for c in values.candidates if c.written and c.kind != "ngram" and step.start <= c.start < step.end]
    return bool(name_verbs(tool.name, lex) & lex.lookup_verbs) and bool(given) and all(c.is_number for c in given)


_SPELLED = frozenset({"number", "expression", "date", "datetime", "time"})  # "a single send", "tomorrow": words as well
_EMPTY_QUOTES = re.compile(r"[\"'“‘「『《]\s*[\"'”’」』》]")  # the marks around a quoted value left out


def without_values(text: str, offset: int, values: RequestValues, kinds: frozenset[str]) -> str:
    """`text` (written at `offset` in the request) without the values of `kinds` written inside it: a
    date, a number or an e-mail address says which parameter takes it (planner/fit.py `value_fit`), not
    which tool the words ask for, and the embedding reads "cinemas near 48.8584,2.2945" farther from
    "points of interest surrounding a given location" than "cinemas near". A number or date spelled in
    words ("a single send", "tomorrow") stays: it is words too."""
    spans = sorted(
        (c.start - offset, c.end - offset)
        for c in values.candidates
        if c.written
        and c.kind in kinds
        and c.start >= offset
        and c.end - offset <= len(text)
        and (c.kind not in _SPELLED or any(ch.isdigit() for ch in text[c.start - offset : c.end - offset]))
    )
    out, at = [], 0
    for start, end in spans:
        if start < at:
            continue
        out.append(text[at:start])
        at = end
    out.append(text[at:])
    kept = _EMPTY_QUOTES.sub(" ", " ".join(part.strip() for part in out))
    return re.sub(r"\s+", " ", kept).strip() or text  # a request of values alone is compared as written


def tool_text(tool: ToolDef) -> str:
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", tool.name).replace("_", " ").replace(".", " ").replace("-", " ")
    return f"{words}: {tool.description}" if tool.description else words


class ToolSelector:
    def __init__(self, embedder: CachedEmbedder, config: SelectionConfig) -> None:
        self.embedder = embedder
        self.config = config

    async def select(
        self,
        request: str,
        catalog: ToolCatalog,
        *,
        limit: int,
        values: RequestValues | None = None,
        lookups: bool = True,
    ) -> Selection:
        """`values`: the request's values (planner/values.py), which say whether it gives an identifier
        itself or only names it (then the lookup that returns it is proposed first, with `lookups`)."""
        if values is None:  # which values the request gives decides whether an identifier needs a lookup
            values = extract(request, date.today())
        parameter_words = {w for t in catalog for name in t.properties for w in ordered_tokens(name)}
        steps = split_steps(request, (tool_verb(t.name) for t in catalog), parameter_words)
        texts = [tool_text(t) for t in catalog]
        lex = lexicon_for(request)  # a language the embedding model does not read is glossed in English
        kinds = self.config.embed_without
        read = [without_values(request, 0, values, kinds)]
        read += [without_values(s.text, s.start, values, kinds) for s in steps]
        vectors = await self.embedder.aembed([*(lex.glossed(text) for text in read), *texts])
        tool_vectors = vectors[len(read) :]
        cosines = vectors[: len(read)] @ tool_vectors.T  # (request + steps, tools)
        per_step = cosines[1:].copy()  # (steps, tools)
        per_step += await asyncio.to_thread(_fit, request, values, steps, catalog)  # CPU off the event loop
        whole = cosines[0]
        best = np.maximum(whole, per_step.max(axis=0))
        names = catalog.names()
        order = list(np.argsort(-best, kind="stable"))
        keep = sorted(order[:limit])  # catalog order: a stable prompt for the same catalog
        shortlist = catalog if len(catalog) <= limit else catalog.subset([names[i] for i in keep])
        steps, per_step = self._merge_implicit(steps, per_step, names)
        hints = self._hints(request, steps, per_step, names, set(shortlist.names()))
        if self.config.repeat_mask:
            hints = await self._unmask_repeats(request, hints, tool_vectors, names, set(shortlist.names()))
        if self.config.consumer_margin > 0:
            hints = await asyncio.to_thread(
                _consumers_over_lookups, request, steps, hints, per_step, names, set(shortlist.names()), catalog,
                values, self.config.consumer_margin,
            )  # fmt: skip
        hints = _join_argument_steps(request, hints, catalog, values)
        proposed = _with_toolless_tails(request, hints)
        spans = [(h.step.start, h.step.end) for h in proposed]
        similarity = {names[i]: float(best[i]) for i in range(len(names))}
        sequence, chained, serves, gaps = with_prerequisites(
            [str(h.tool) for h in proposed],
            spans,
            shortlist,
            catalog,
            self.config,
            values,
            lookups=lookups,
            similarity=similarity,
        )
        added = [t for t in sequence if t not in shortlist]
        if added:  # a lookup found outside the shortlist joins it
            keep_names = set(shortlist.names()) | set(added)
            shortlist = catalog.subset([n for n in catalog.names() if n in keep_names])
        top = float(per_step.max()) if per_step.size else 0.0
        return Selection(
            shortlist=shortlist,
            steps=steps,
            hints=hints,
            sequence=sequence,
            best_score=max(top, float(whole.max()) if whole.size else 0.0),
            scores={names[i]: round(float(best[i]), 4) for i in range(len(names))},
            step_scores={names[j]: [float(per_step[i, j]) for i in range(len(steps))] for j in range(len(names))},
            no_fit=max(top, float(whole.max()) if whole.size else 0.0) < self.config.no_fit_below,
            lookups=chained,
            gaps=gaps,
            node_steps=[proposed[i].step for i in serves],
        )

    def _merge_implicit(
        self, steps: list[Step], per_step: np.ndarray, names: list[str]
    ) -> tuple[list[Step], np.ndarray]:
        """An implicit step stays a step only when its best tool fits it (step_min) and differs from
        the best tool of the step before; otherwise it is part of that step."""
        kept: list[int] = []
        merged: list[Step] = []
        for i, step in enumerate(steps):
            best = int(np.argmax(per_step[i])) if per_step.size else 0
            if step.implicit and merged:
                before = int(np.argmax(per_step[kept[-1]]))
                if per_step[i, best] < self.config.step_min or best == before:
                    last = merged[-1]
                    merged[-1] = Step(last.text, last.start, step.end, last.implicit)
                    continue
            kept.append(i)
            merged.append(step)
        return merged, per_step[kept] if kept else per_step

    def _hints(
        self, request: str, steps: list[Step], per_step: np.ndarray, names: list[str], allowed: set[str]
    ) -> list[StepHint]:
        hints: list[StepHint] = []
        used: list[str] = []
        for i, step in enumerate(steps):
            order = [j for j in np.argsort(-per_step[i], kind="stable") if names[j] in allowed]
            if not order or (
                per_step[i, order[0]] < self.config.step_min and not self._stands_out(request, step, per_step[i], order)
            ):
                hints.append(StepHint(step, None, float(per_step[i, order[0]]) if order else 0.0))
                continue
            choice = order[0]
            runner = order[1] if len(order) > 1 else choice
            close = per_step[i, runner] >= per_step[i, choice] - self.config.repeat_margin
            if names[choice] in used and names[runner] not in used and close and _writes_name_of(step, names[runner]):
                choice = runner  # "…, and invite priya@school.edu to co-teach it": the step names another tool
            if hints and hints[-1].tool == names[choice] and lexicon_for(step.text).anaphora.search(step.text):
                last = hints[-1]  # "Look up Brighton and give me its details": more of the same call
                hints[-1] = StepHint(
                    Step(last.step.text, last.step.start, step.end, last.step.implicit), last.tool, last.score
                )
                continue
            used.append(names[choice])
            hints.append(StepHint(step, names[choice], float(per_step[i, choice])))
        return hints

    def _stands_out(self, request: str, step: Step, row: np.ndarray, order: list[int]) -> bool:
        """A step a sequencing connective opens ("…, then comment on it: '…'") is an action the request asks
        for: its best tool is proposed below `step_min` when it still reaches `no_fit_below` and leads the
        runner-up by `connective_lead`."""
        lead = self.config.connective_lead
        if not lead or row[order[0]] < self.config.no_fit_below or not follows_connective(request, step):
            return False
        return len(order) < 2 or float(row[order[0]] - row[order[1]]) >= lead

    async def _unmask_repeats(
        self, request: str, hints: list[StepHint], tool_vectors: np.ndarray, names: list[str], allowed: set[str]
    ) -> list[StepHint]:
        """A step given a tool an earlier step already has often only *names* that step's result ("then
        calculate the square of the monthly mortgage payment"): without the words it shares with those
        earlier steps, another tool may fit it clearly better, and then it gets that one. A verbless
        (implicit) step left with a repeat is more of the step before it ("…, a due date of May 1 for
        the calculated payment"): it joins that step."""
        repeats: list[tuple[int, str]] = []
        for i, hint in enumerate(hints):
            earlier = [h.step.text for h in hints[:i] if h.tool is not None and h.tool == hint.tool]
            if hint.tool is None or not earlier:
                continue
            shared = {w for text in earlier for w in _words(text)}
            kept = [w for w in re.findall(r"[A-Za-z0-9']+", hint.step.text) if w.lower() not in shared]
            if kept:
                repeats.append((i, " ".join(kept)))
        if not repeats:
            return hints
        vectors = await self.embedder.aembed([text for _, text in repeats])
        scores = vectors @ tool_vectors.T
        out = list(hints)
        for (i, _), row in zip(repeats, scores, strict=True):
            hint = out[i]
            used = {h.tool for h in out[:i] if h.tool is not None}
            same = names.index(hint.tool) if hint.tool in names else -1
            order = [j for j in np.argsort(-row, kind="stable") if names[j] in allowed and names[j] not in used]
            if not order or same < 0:
                continue
            alt = order[0]
            if row[alt] >= self.config.step_min and row[alt] >= row[same] + self.config.repeat_mask_margin:
                out[i] = StepHint(hint.step, names[alt], float(row[alt]))
            elif hint.step.implicit and i > 0:
                out[i] = StepHint(hint.step, None, hint.score)  # joined below
        joined: list[StepHint] = []
        for i, hint in enumerate(out):
            if hint.tool is None and hints[i].tool is not None and joined:
                last = joined[-1]
                step = Step(
                    request[last.step.start : hint.step.end], last.step.start, hint.step.end, last.step.implicit
                )
                joined[-1] = StepHint(step, last.tool, last.score)
                continue
            joined.append(hint)
        return joined

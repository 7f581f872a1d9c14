"""One request prepared for decoding, and what each node's call is given.

`PreparedRequest` holds everything derived from the request before decoding (values, selection,
packs, demonstrations, skeleton, learned data flow, the values a skeleton's structure carries over).
`NodeTurns` builds each node's turn for the staged decoder — its grammar context, step, shown values,
references and draft — from the stages the configuration turns on (planner/config.py `stages`), and
lists the required values no node can fill (`missing`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from contract.demonstrations import Demonstration
from planner.arg_options import ArgOptions, missing_inputs
from planner.argkinds import classify, ordered_tokens
from planner.catalog import ToolCatalog, ToolDef
from planner.config import PlannerConfig
from planner.dataflow import LearnedRule, References, learned_references, reference_hints
from planner.decoding import NodeTurn
from planner.demos import skeleton_refs
from planner.drafting import cued, draft_args
from planner.evidence import NodeEvidence
from planner.flat_args import id_items_view, siblings
from planner.lexicon import Lexicon, lexicon, lexicon_for
from planner.lookups import kind_option
from planner.packs import DomainPack
from planner.query_filters import filter_object, filter_value
from planner.request_words import RequestWords
from planner.retries import RetryPlan
from planner.selection import Selection
from planner.upstream import Upstream
from planner.value_grammar import ValueContext
from planner.value_shapes import written_shape
from planner.values import RequestValues, extract, rank
from planner.wrappers import wrap_reference


@dataclass
class PreparedRequest:
    """Everything derived from one request before decoding."""

    text: str
    catalog: ToolCatalog
    values: RequestValues
    selection: Selection
    packs: list[DomainPack]
    demos: list[Demonstration]
    skeleton: Demonstration | None
    tenant: str
    references: References  # how the retrieved demonstrations filled each (tool, argument)
    carried: list[dict[str, Any]] = field(default_factory=list)  # per skeleton node: argument → refilled value
    given: ToolCatalog | None = None  # the catalog as the client sent it (`catalog`: its flat views)
    ambient: frozenset[str] = frozenset()  # parameters about the call, never written (planner/ambient.py)

    def given_tools(self, names: Sequence[str]) -> ToolCatalog:
        """`names` as the client declared them (object arguments whole), for the prompt's tool lines."""
        source = self.given if self.given is not None else self.catalog
        return source.subset([n for n in names if n in source])


@dataclass(frozen=True)
class MissingInput:
    """A required value the request does not give (or gives and a business rule refuses)."""

    node: str
    tool: str
    argument: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"node": self.node, "tool": self.tool, "argument": self.argument, "reason": self.reason}


class NodeTurns:
    """The `NodeContext` of one decoding attempt (planner/decoding.py)."""

    def __init__(self, req: PreparedRequest, config: PlannerConfig, plan_try: RetryPlan, rule: LearnedRule | None):
        self.req = req
        self.config = config
        self.plan_try = plan_try
        self.rule = rule
        self.skeleton = req.skeleton if plan_try.use_skeleton else None
        self.forced = skeleton_refs(self.skeleton) if self.skeleton is not None else None
        self._demo_chose: dict[int, set[str]] = {}
        self._demo_words: set[str] | None = None

    def tools_given(self) -> tuple[list[str] | None, str]:
        """The tool sequence the decoder is given (None: the model writes it) and where it came from."""
        if self.skeleton is not None:
            return self.skeleton.tools(), "skeleton"
        if self.config.tool_choice == "proposal":
            return list(self.req.selection.sequence), "proposal"
        return None, "model"

    async def __call__(self, index: int, name: str, tools: list[str], written: list[dict[str, Any]]) -> NodeTurn:
        req, stages = self.req, self.config.stages
        shortlist = req.selection.shortlist
        tool = shortlist.get(name) if name in shortlist else req.catalog.get(name)
        step = req.selection.step_for(index, name, tools)
        span = (step.start, step.end) if step is not None else None
        text = step.text if step is not None else req.text
        upstream = [Upstream(n["id"], self._tool(n["tool"]), n["args"]) for n in written]
        preferred = self._preferred(index, tool, tools)
        learned: dict[str, tuple[str, ...]] = {}
        if self.rule is not None:
            learned = learned_references(tool, req.references, self.rule, upstream, lambda a: cued(req.values, a, span))
            linked = self._links(index, tools)  # this request's own lookup of an argument beats the history's node
            learned = {arg: nodes for arg, nodes in learned.items() if arg not in linked}
        arguments = self.arguments(index, tool, tools, upstream, span) if stages.evidence else None
        context = ValueContext(
            grounding=self.plan_try.grounding,
            values=req.values,
            span=span,
            upstream=upstream,
            forced_refs=self.forced[index] if self.forced is not None and index < len(self.forced) else None,
            preferred=preferred,
            excluded=self.plan_try.excluded,
            refs_only=learned,
            arguments=arguments,
        )
        shown = shown_values(req.values, tool.arg_names(), preferred, span)
        refs = reference_hints(text, tool.arg_names(), upstream)
        draft = (
            draft_args(tool, req.values, span, upstream, preferred, text, defaults=stages.defaults)
            if stages.drafts
            else None
        )
        if draft is not None and arguments is not None:
            draft = _with_options(draft, arguments)
        if draft is not None and self.plan_try.grounding not in ("grounded", "strict"):  # as the grammar writes refs
            draft = {k: wrap_reference(v) for k, v in draft.items()}
        return NodeTurn(context, text, shown, refs, draft)

    def arguments(
        self,
        index: int,
        tool: ToolDef,
        tools: Sequence[str],
        upstream: Sequence[Upstream],
        span: tuple[int, int] | None,
    ) -> dict[str, ArgOptions]:
        """Each argument's options (planner/evidence.py). A skeleton's node also takes its demonstration's
        references, required constants and the values refilled from this request (planner/transfer.py), and
        its optional constants (`currencyCode: EUR`, the user's choice) when this request asks for no
        optional argument the demonstration did not write; which optional arguments are written, this
        request's evidence decides, as without a skeleton."""
        links = self._links(index, tools)
        evidence = NodeEvidence(
            self.req.values, span, upstream, links, defaults=self.config.stages.defaults, ambient=self.req.ambient
        )
        options = evidence.node(tool)
        for arg, values in self._preferred(index, tool, tools).items():  # a pack's dates (a check-out it
            current = options.get(arg)  # computed from the nights) join a required date argument's own
            if current is not None and current.required and current.kind.is_date and values:
                fresh = tuple(v for v in values if v not in current.values and _same_type(v, current.values))
                options[arg] = replace(current, values=(*fresh, *current.values), missing=None)
        looked_up = {lk.seed for lk in self.req.selection.lookups if lk.consumer == index and lk.seed}
        if looked_up and list(tools) == self.req.selection.sequence:  # what found the thing is not a new value
            for arg, current in options.items():
                found = current.values and all(isinstance(v, str) and v in looked_up for v in current.values)
                if not current.required and found:
                    options[arg] = replace(current, values=(), supported=False)
        for arg, seeds in self._seeds(index, tool, tools).items():  # a lookup is queried by the request's name
            current = options[arg]
            options[arg] = replace(current, values=(*seeds, *current.values), typed=True, supported=True)
        for arg, kind in self._kinds(index, tool, tools).items():  # … for the kind of thing its consumer needs
            if (current := options.get(arg)) is not None:
                options[arg] = replace(current, values=(kind,), typed=True, closed=True, supported=True, missing=None)
        carried = self._carried(index)
        asked = {arg for arg, current in options.items() if not current.required and current.supported}
        same_ask = asked <= set(self._taught(index))  # this request asks for nothing the demonstration did not
        for arg, value in carried.items():
            current = options.get(arg)
            if current is None or current.supported:
                continue
            reference = isinstance(value, str) and value.startswith("$")
            if not current.required and not reference and not self._refilled(value):
                if not same_ask:
                    continue  # another request's optional constant (`unsubscribed: true`): this one asks otherwise
                if arg in self._chosen_by_demo(index, tool):
                    continue  # the demonstration's user asked for it ("expiring June 30"): this one did not
            kept = (value,) if not reference else ()
            options[arg] = ArgOptions(arg, False, current.kind, kept, typed=True, closed=True)
        written = [arg for arg, o in options.items() if not o.required and o.supported and (o.values or o.refs)]
        for arg in written:  # a field written makes its object, and the fields that object requires, written
            for sibling in siblings(tool, arg):
                current = options.get(sibling)
                if current is not None and not current.required and not (current.values or current.refs):
                    options[sibling] = replace(evidence.argument(tool, sibling, required=True), missing=None)
        return options

    def _chosen_by_demo(self, index: int, tool: ToolDef) -> set[str]:
        """The optional arguments of the skeleton's node `index` that its own request asked for: that user's
        choices, not constants of the structure, though the value is not written there as such. Either the
        demonstration's request gives evidence for the argument (a date said in another time zone), or it says
        a word of the argument's name or value that this request does not ("without emailing her" for
        `sendNotificationEmail: false`, "most recently modified" for `orderBy: "modifiedTime desc"`). A
        constant no word asked for (`currencyCode: EUR`, the user's habit) stays a constant."""
        if self.skeleton is None:
            return set()
        if index not in self._demo_chose:
            shown = extract(self.skeleton.request, self.config.effective_today())
            options = NodeEvidence(shown, None, [], defaults=self.config.stages.defaults).node(tool)
            chosen = {a for a, o in options.items() if not o.required and o.supported}
            nodes = self.skeleton.plan.get("nodes", [])
            node = nodes[index] if index < len(nodes) and isinstance(nodes[index], dict) else {}
            lex = lexicon_for(self.req.text)
            if self._demo_words is None:  # the words only the demonstration's request says (once per request)
                self._demo_words = _stems(self.skeleton.request, lex) - _stems(self.req.text, lex)
            only_there = self._demo_words
            for arg, value in (node.get("args") or {}).items():
                text = f"{arg} {value}" if isinstance(value, str) else arg
                words = {w for token in ordered_tokens(text) for w in re.findall(r"[a-z]+", token)}
                if {lex.stem(w) for w in words if w not in lex.stopwords} & only_there:
                    chosen.add(arg)
            self._demo_chose[index] = chosen
        return self._demo_chose[index]

    def _taught(self, index: int) -> list[str]:
        """The arguments the skeleton's node `index` wrote."""
        nodes = self.skeleton.plan.get("nodes", []) if self.skeleton is not None else []
        node = nodes[index] if index < len(nodes) and isinstance(nodes[index], dict) else {}
        return list(node.get("args", {}))

    def _refilled(self, value: Any) -> bool:
        """The value is one this request writes (as written, its ISO reading or its number as text)."""
        return any(
            c.value == value and type(c.value) is type(value) or (c.iso and c.iso == value) or str(c.value) == value
            for c in self.req.values.candidates
        )

    def _seeds(self, index: int, tool: ToolDef, tools: Sequence[str]) -> dict[str, tuple[Any, ...]]:
        """For a lookup node of the proposal: its query argument → the names the request gives (as the
        filter object that finds each, where the tool is queried by one: planner/query_filters.py)."""
        selection = self.req.selection
        if not self.config.stages.lookups or list(tools) != selection.sequence:
            return {}
        seeds = tuple(dict.fromkeys(lk.seed for lk in selection.lookups if lk.producer == index and lk.seed))
        query = query_argument(tool, seeds[0]) if seeds else None
        if query is None:
            return {}
        schema = tool.properties.get(query)
        if filter_object(schema) is not None:
            return {query: tuple(filter_value(schema, seed, written_shape(seed)) for seed in seeds)}
        return {query: seeds}

    def _kinds(self, index: int, tool: ToolDef, tools: Sequence[str]) -> dict[str, str]:
        """For a lookup node of the proposal that searches several kinds of thing (a typeahead's
        `resource_type`): that argument → the kind its consumer's argument identifies (planner/lookups.py)."""
        selection = self.req.selection
        if not self.config.stages.lookups or list(tools) != selection.sequence:
            return {}
        out: dict[str, str] = {}
        for lk in selection.lookups:
            if lk.producer != index or not 0 <= lk.consumer < len(tools):
                continue
            found = kind_option(tool, id_items_view(self._tool(tools[lk.consumer])), lk.arg)
            if found is not None and found[0] in tool.properties:
                out.setdefault(*found)
        return out

    def missing(self, tools: Sequence[str]) -> list[MissingInput]:
        """The required values no node of `tools` (the given sequence) can be filled with."""
        out: list[MissingInput] = []
        upstream: list[Upstream] = []
        for index, name in enumerate(tools):
            tool = self._tool(name)
            step = self.req.selection.step_for(index, name, list(tools))
            span = (step.start, step.end) if step is not None else None
            options = self.arguments(index, tool, tools, upstream, span)
            forced = self.forced[index] if self.forced is not None and index < len(self.forced) else {}
            preferred = self._preferred(index, tool, tools)
            for arg, reason in missing_inputs(options).items():
                if arg not in forced and not preferred.get(arg):
                    out.append(MissingInput(f"n{index + 1}", name, arg, reason))
            upstream.append(Upstream(f"n{index + 1}", tool))
        selection = self.req.selection
        if self.config.stages.lookups and list(tools) == selection.sequence:
            for gap in selection.gaps:
                why = f"the request does not say which one ({gap.producer} could look it up by a name)"
                out.append(MissingInput(f"n{gap.consumer + 1}", tools[gap.consumer], gap.arg, why))
        return out

    # pieces -----------------------------------------------------------------------------------------
    def _tool(self, name: str) -> ToolDef:
        shortlist = self.req.selection.shortlist
        return shortlist.get(name) if name in shortlist else self.req.catalog.get(name)

    def _links(self, index: int, tools: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """A lookup's output is the only thing its consumer's argument takes (the proposal's own sequence)."""
        selection = self.req.selection
        if not self.config.stages.lookups or list(tools) != selection.sequence:
            return {}
        return {
            lookup.arg: (f"$n{lookup.producer + 1}" + (f".{lookup.path}" if lookup.path else ""),)
            for lookup in selection.lookups
            if lookup.consumer == index
        }

    def _preferred(self, index: int, tool: ToolDef, tools: Sequence[str]) -> dict[str, list[Any]]:
        """Values to offer first: a skeleton's carried values, a lookup's seed, then the packs'."""
        preferred: dict[str, list[Any]] = {}
        for pack in self.req.packs:
            preferred.update(pack.preferred_values(self.req.text, tool, self.config.effective_today()))
        for arg, seeds in self._seeds(index, tool, tools).items():
            preferred[arg] = list(seeds)
        for arg, value in self._carried(index).items():
            if not (isinstance(value, str) and value.startswith("$")):
                preferred[arg] = [value, *[v for v in preferred.get(arg, []) if v != value]]
        return preferred

    def _carried(self, index: int) -> dict[str, Any]:
        if self.skeleton is None or not self.config.stages.value_transfer or index >= len(self.req.carried):
            return {}
        return self.req.carried[index]


def query_argument(tool: ToolDef, seed: str) -> str | None:
    """The string argument a lookup is queried by: a required one, else one of the seed's own kind (an
    e-mail argument for an e-mail), else a text argument named like a query (the lexicon's `query_words`);
    None when there is none (never a date or a page token)."""
    lex = lexicon("en")
    strings = [a for a in tool.arg_names() if (tool.properties.get(a) or {}).get("type") in ("string", None)]
    required = [a for a in strings if a in tool.required and classify(a, tool.properties.get(a)).kind == "text"]
    if required:
        return required[0]
    shape = written_shape(seed)
    for arg in strings:
        if shape is not None and classify(arg, tool.properties.get(arg)).kind == shape:
            return arg
    for word in lex.query_words:
        for arg in strings:
            schema = tool.properties.get(arg)
            if word in ordered_tokens(arg) and (
                classify(arg, schema).kind in ("text", shape or "text") or filter_object(schema) is not None
            ):
                return arg
    return None  # nothing to query by: the lookup lists, and its first result is taken


def _same_type(value: Any, values: Sequence[Any]) -> bool:
    """A pack value of the kind the argument's own values are (any, when it has none yet)."""
    if isinstance(value, str) and value.startswith("$"):
        return False
    return not values or any(type(v) is type(value) for v in values)


def _with_options(draft: dict[str, Any], arguments: Mapping[str, ArgOptions]) -> dict[str, Any]:
    """The draft as the grammar allows it: arguments left out are dropped, a typed value replaced by the
    first of its options when the draft's is not one of them."""
    out: dict[str, Any] = {}
    for arg, value in draft.items():
        options = arguments.get(arg)
        if options is None or not options.supported:
            continue
        if options.typed and options.closed and value not in options.values and value not in options.refs:
            if not (options.values or options.refs):
                continue
            value = (options.refs or options.values)[0]
        out[arg] = value
    for arg, options in arguments.items():  # evidence the draft did not take
        if arg not in out and not options.required and options.supported and (options.values or options.refs):
            out[arg] = (options.values or options.refs)[0]
    return out


def shown_values(
    values: RequestValues, args: Sequence[str], preferred: Mapping[str, list[Any]], span: tuple[int, int] | None
) -> list[Any]:
    """The values listed in a node's prompt: the pack's first, then the best request values per argument."""
    shown: list[Any] = []
    for name in args:
        for value in preferred.get(name, [])[:2]:
            if value not in shown:
                shown.append(value)
    pool = [c for c in values.candidates if c.kind != "ngram"]
    per_arg = [rank(pool, name, span=span, limit=3) for name in args]
    for depth in range(3):
        for ranked in per_arg:
            if depth < len(ranked) and ranked[depth].value not in shown:
                shown.append(ranked[depth].value)
    return shown


def _stems(text: str, lex: Lexicon) -> set[str]:
    """The stems of a request's words (its glossary's English words for another language)."""
    return {lex.stem(w) for w in RequestWords(text, lex).words if w not in lex.stopwords}

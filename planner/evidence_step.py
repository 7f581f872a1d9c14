"""What the evidence of one node reads, and what every kind's rules share: the request's values, the
step's span, earlier nodes' outputs, the English lexicon and the request's ties (`StepEvidence`); the
candidates inside the step; how an optional argument's options are written.

planner/evidence.py assembles a node from the per-kind rules built on this (planner/evidence_dates.py,
planner/evidence_kinds.py); they share this state, so each of them reads one node the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner.arg_options import ArgOptions
from planner.argkinds import ArgKind
from planner.lexicon import lexicon
from planner.request_words import RequestWords
from planner.ties import Ties
from planner.upstream import Upstream
from planner.values import Candidate, RequestValues


class StepEvidence:
    """The state one node's evidence reads, and the step's candidates."""

    def __init__(
        self,
        values: RequestValues,
        span: tuple[int, int] | None,
        upstream: Sequence[Upstream],
        links: Mapping[str, tuple[str, ...]] | None = None,
        *,
        defaults: bool = False,
        ambient: frozenset[str] = frozenset(),
    ) -> None:
        self.defaults = defaults  # an optional argument without evidence takes its schema default
        self.ambient = ambient  # the catalog's parameters about the call (planner/ambient.py): never written
        self.values = values
        self.span = span
        self.upstream = upstream
        self.links = links or {}
        self.lex = lexicon("en")  # argument names are English words
        self.ties = Ties(values, self.lex)
        self.said = RequestWords(values.text, self.lex)
        self._kinds: dict[str, ArgKind] = {}
        self._properties: Mapping[str, Any] = {}  # the tool's arguments' schemas
        self._tool_verbs: set[str] = set()
        self._lists = False  # the tool lists or finds things (its size argument takes a count)
        self._listed: set[str] = set()  # stems of what it lists

    def _optional(
        self, arg: str, kind: ArgKind, values: list[Any], same: tuple[str, ...], *, typed: bool = True
    ) -> ArgOptions:
        kept: tuple[Any, ...] = ()
        for value in values:  # (lists are values too: no set, no dict)
            if value not in kept:
                kept = (*kept, value)
        supported = bool(kept or same)
        return ArgOptions(arg, False, kind, kept, same, typed=typed, closed=True, supported=supported)

    # the node's step --------------------------------------------------------------------------------
    def _inside(self) -> list[Candidate]:
        span = self.span
        return [c for c in self.values.candidates if span is None or c.start < 0 or span[0] <= c.start < span[1]]


def kind_words(kind: str) -> str:
    return {
        "date": "date",
        "datetime": "date",
        "epoch": "date",
        "time": "time",
        "identifier": "identifier",
        "email": "e-mail address",
        "url": "URL",
        "phone": "phone number",
    }.get(kind, kind)

"""What one request offers its arguments: the `Candidate` values found in it, and `RequestValues`, all of
them with the request's words.

They are what extraction (planner/values.py) hands to ranking, ties, evidence and the grammar, kept in
a module of their own so that the helpers extraction is built from can name them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_CANDIDATES = 120


@dataclass(frozen=True)
class Candidate:
    """One value the request offers; `start`..`end` is where it was written (-1 when derived)."""

    value: Any
    kind: str  # quoted, list, object, email, url, phone, date, datetime, time, expression, number, code, phrase,
    # ngram, coordinates (a written "lat,lng" pair) and its latitude and longitude
    start: int
    end: int
    cue: str = ""  # the few words just before it ("tax rate of")
    tail: str = ""  # the word right after it ("days" in "30 days")
    iso: str = ""  # dates: the ISO reading (YYYY-MM-DD); times: HH:MM on a 24-hour clock
    written: bool = True  # False: a reading derived from what was written (an ISO form, 8% as 0.08)

    @property
    def is_string(self) -> bool:
        return isinstance(self.value, str)

    @property
    def is_number(self) -> bool:
        return isinstance(self.value, (int, float)) and not isinstance(self.value, bool)


@dataclass
class RequestValues:
    """Every candidate of one request, and its words (for grounded free text)."""

    text: str
    candidates: list[Candidate] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    language: str = "en"

    def strings(self) -> list[Candidate]:
        return [c for c in self.candidates if c.is_string]

    def numbers(self) -> list[Candidate]:
        return [c for c in self.candidates if c.is_number]

    def lists(self) -> list[Candidate]:
        return [c for c in self.candidates if isinstance(c.value, list)]

    def objects(self) -> list[Candidate]:
        return [c for c in self.candidates if isinstance(c.value, dict)]

    def add(self, candidate: Candidate) -> None:
        """One candidate per value: the first written, unless it was only an n-gram and this one has a shape
        ("the example.org zone" after "record _acme-challenge.example.org": a host, not three words)."""
        for i, c in enumerate(self.candidates):
            if c.value == candidate.value and type(c.value) is type(candidate.value):
                if c.kind == "ngram" and candidate.kind != "ngram":
                    self.candidates[i] = candidate
                return
        if len(self.candidates) < MAX_CANDIDATES:
            self.candidates.append(candidate)

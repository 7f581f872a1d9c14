"""Evidence for date and time arguments: the step's written dates and clocks an argument is tied to (or
is the tool's only one of), rendered in its declared format; a date takes the clock written after it or
tied to its argument, and the two ends of one span ("from 10:00 to 11:00") each take their own.
"""

from __future__ import annotations

from typing import Any

from planner.arg_options import ArgOptions
from planner.argkinds import ArgKind, ordered_tokens
from planner.dates import DateFormat, stated_zone
from planner.evidence_step import StepEvidence, kind_words
from planner.upstream import could_supply
from planner.value_shapes import numeric
from planner.values import Candidate


class DateEvidence(StepEvidence):
    """The options of a date, date-time or time argument."""

    def _date(self, arg: str, kind: ArgKind, required: bool, same: tuple[str, ...]) -> ArgOptions:
        fmt = kind.date_format
        assert fmt is not None
        clocks = fmt.kind == "time"
        usable_kinds = ("time", "datetime") if clocks else ("date", "datetime")

        def usable(cands: list[Candidate]) -> list[Candidate]:
            return [c for c in cands if c.written and c.iso and c.kind in usable_kinds]

        pool = usable(self._inside())
        if required and not pool:  # "... and the weather there that day": the date of another step
            pool = usable(self.values.candidates)
        sole = self._sole(arg, clocks)  # the tool's only date (or time) argument: every date in its step is its
        cued = [
            c
            for c in pool
            if self.ties.cued(c, arg, optional=not required)
            or (sole and self.ties.tie(c, arg) >= self.ties.strongest(c))
        ]
        tied = self._tied_clock(arg) if fmt.kind == "datetime" else None
        dates = [c for c in pool if c.kind == "date"]
        if tied is not None and not cued and len({c.iso for c in dates}) == 1:
            cued = dates[:1]  # "on March 3 from 10:00 to 11:00": the step's one date, at the clock tied to it
        chosen = cued if not required else cued + [c for c in pool if c not in cued]
        rendered: list[Any] = []
        for c in chosen:
            rendered += [v for v in self._forms(c, fmt, tied) if v is not None and v not in rendered]
        if not required:
            return self._optional(arg, kind, rendered, same, typed=True)
        missing = None
        if not rendered and not could_supply(self.upstream, kind, arg, self.lex):
            missing = f"no {kind_words(fmt.kind)} in the request"
        refs = same if rendered else ()
        return ArgOptions(arg, True, kind, tuple(rendered), refs, typed=True, closed=bool(rendered), missing=missing)

    def _forms(self, c: Candidate, fmt: DateFormat, tied: str | None = None) -> list[Any]:
        """A written date or time in the argument's format; without a declared format a value the user
        wrote in digits or as a clock ("10/05/2023", "10:00 AM", "2022-12-01 10:00") is kept as written."""
        forms: list[Any] = []
        if c.kind == "time":
            if not fmt.declared:
                forms.append(c.value)
            forms.append(fmt.render("", c.iso) if fmt.kind == "time" else None)
            return forms
        clock = c.value[11:16] if c.kind == "datetime" else (tied or self._clock(c) if fmt.kind != "date" else None)
        full = c.kind == "datetime" and len(c.value) > 19 and fmt.kind == "datetime"  # with its offset already
        if (not fmt.declared or full) and c.value != c.iso and (c.kind == "datetime" or numeric(c.value)):
            forms.append(c.value)
        zone = stated_zone(self.values.text, self.lex) if fmt.kind == "datetime" else ""
        forms.append(fmt.render(c.iso, clock, zone) if fmt.kind != "time" else fmt.render("", clock))
        return forms

    def _sole(self, arg: str, clocks: bool) -> bool:
        """`arg` is the only argument of its tool that takes a date (a time when `clocks`)."""
        dated = [a for a in self.ties.args if (k := self._kinds.get(a)) is not None and k.is_date]
        same_kind = [a for a in dated if (self._kinds[a].kind == "time") == clocks]
        return same_kind == [arg]

    def _tied_clock(self, arg: str) -> str | None:
        """The time of the step a role word ties to this argument ("from 10:00" → start, "to 11:00" → end,
        "between 09:00" → min), else, when another date argument holds the step's tied time, the first time
        no argument is tied to ("and 12:00" → max); None when the step writes no time."""
        times = [t for t in self._inside() if t.kind == "time" and t.iso and t.written]
        own = [t for t in times if self.ties.cued(t, arg)]
        if own:
            return own[0].iso
        pairs = [a for a in self.ties.args if a != arg and a in self.ties.dated and _counterparts(a, arg)]
        taken = [t for t in times if any(self.ties.cued(t, other) for other in pairs)]
        free = [t for t in times if t not in taken and self.ties.strongest(t) == 0]
        return free[0].iso if taken and free else None

    def _clock(self, c: Candidate) -> str | None:
        """The time written nearest after a date (its clock), if any."""
        times = [t for t in self.values.candidates if t.kind == "time" and t.iso and t.start >= c.end]
        return min(times, key=lambda t: t.start).iso if times else None


def _counterparts(a: str, b: str) -> bool:
    """Two arguments named alike but for one word: `body.start.dateTime` / `body.end.dateTime`,
    `timeMin` / `timeMax` (the two ends of one span)."""
    x, y = ordered_tokens(a), ordered_tokens(b)
    return len(x) == len(y) and sum(1 for i, j in zip(x, y, strict=True) if i != j) == 1

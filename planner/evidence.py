"""Which arguments a node writes, and with what: every value needs evidence in the request or upstream.

Real API schemas have many optional parameters. A small model offered the request's phrases for each
of them fills them all ("currency": "invoice", "dueDays": "March 3, 2027"), so an optional argument is
written only with evidence, and left out otherwise (the service's default applies):

- its name, or a role word that fits it, is written right before the value or its name right after it
  ("issued March 3" → `issueDate`, "from May 2" → `startDate`, "30 days" → `dueDays`, "under 500" →
  `maxPrice`);
- an enum option the request's words name ("in euros" → `EUR`, "paid invoices" → `paid`), only when the
  mapping is clear (one option);
- a boolean whose own words the request uses ("non-stop" → `nonStop: true`, "without archived" →
  `includeArchived: false`);
- an earlier node outputs a field named like it.

Every argument, required or not, takes values of its kind (planner/argkinds.py) in its declared format:
a date argument only dates (written as its schema or description declares: ISO 8601 by default, a date
the request already writes in digits also as written), an identifier only id-shaped values or an earlier
output (a lookup's: planner/prerequisites.py) and never a name, a number only numbers. A required
argument nothing can fill — no value of its kind in the request, no earlier output that could hold it —
is *missing*: the planner answers `needs_input` instead of inventing it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner.argkinds import ArgKind, classify, ordered_tokens
from planner.catalog import ToolDef
from planner.dates import DateFormat, stated_zone
from planner.grammar import Upstream, fits
from planner.lexicon import lexicon, lexicon_for, weights
from planner.lookups import description_keywords
from planner.values import Candidate, RequestValues, name_tokens, role_match

_ID_SHAPES = ("code", "quoted", "email", "url", "phone", "number")  # what an identifier may look like
_TEXT_KINDS = ("quoted", "phrase", "code", "ngram", "email", "url", "phone", "expression")


@dataclass(frozen=True)
class ArgOptions:
    """What one argument of one node may be written with.

    `typed`: `values` replace the request's generic candidates in the grammar (dates, identifiers,
    mapped enums, flags, evidence of an optional argument); `closed`: nothing else may be written (no
    free-value detour); `refs`: the only references offered when not empty (a lookup's output)."""

    name: str
    required: bool
    kind: ArgKind
    values: tuple[Any, ...] = ()
    refs: tuple[str, ...] = ()
    typed: bool = False
    closed: bool = False
    supported: bool = True
    missing: str | None = None


class NodeEvidence:
    """The options of every argument of one node."""

    def __init__(
        self,
        values: RequestValues,
        span: tuple[int, int] | None,
        upstream: Sequence[Upstream],
        links: Mapping[str, tuple[str, ...]] | None = None,
        *,
        defaults: bool = False,
    ) -> None:
        self.defaults = defaults  # an optional argument without evidence takes its schema default
        self.values = values
        self.span = span
        self.upstream = upstream
        self.links = links or {}
        self.lex = lexicon("en")  # argument names are English words
        self.words = [w.lower() for w in re.findall(r"[A-Za-z]+", values.text)]
        self._args: tuple[str, ...] = ()
        self._best: dict[int, float] = {}
        self._kinds: dict[str, ArgKind] = {}

    def node(self, tool: ToolDef) -> dict[str, ArgOptions]:
        out = {arg: self.argument(tool, arg) for arg in tool.arg_names()}
        self._untied(out)
        for arg, options in out.items():
            schema = tool.properties.get(arg)
            if self.defaults and not options.supported and isinstance(schema, dict) and "default" in schema:
                out[arg] = ArgOptions(arg, False, options.kind, (schema["default"],), typed=True, closed=True)
        return out

    def _untied(self, out: dict[str, ArgOptions]) -> None:
        """An address no argument's name or role ties ("Email ana@example.com ...") goes to the first
        argument of its kind that has no value yet (`to` before `cc`: the tool's own order)."""
        for shape in ("email", "url", "phone"):
            for c in self._inside():
                if not c.written or _shape(c) != shape or self._strongest(c) > 0:
                    continue
                if any(c.value in o.values for o in out.values()):
                    continue
                for arg, options in out.items():
                    if options.kind.kind == shape and not options.values and not options.refs:
                        out[arg] = replace(options, values=(c.value,), typed=True, closed=True, supported=True)
                        break

    # one argument -------------------------------------------------------------------------------------
    def argument(self, tool: ToolDef, arg: str) -> ArgOptions:
        if self._args != tool.arg_names():
            self._args, self._best = tool.arg_names(), {}
            self._kinds = {a: classify(a, tool.properties.get(a)) for a in self._args}
        schema = tool.properties.get(arg)
        schema = schema if isinstance(schema, dict) else {}
        kind = classify(arg, schema)
        required = arg in tool.required
        if arg in self.links:
            return ArgOptions(arg, required, kind, refs=self.links[arg], typed=True, closed=True)
        same = self._same_named_refs(arg, schema) if required else ()  # (optional: a filler more often than not)
        if kind.is_date:
            return self._date(arg, kind, required, same)
        if kind.kind == "enum":
            return self._enum(arg, schema, kind, required, same)
        if kind.kind == "boolean":
            return self._flag(arg, kind, required, same)
        if kind.is_identifier or kind.kind in ("email", "url", "phone"):
            return self._shaped(arg, kind, required, same, description_keywords(schema) if kind.is_identifier else [])
        if kind.kind in ("number", "integer"):
            return self._number(arg, schema, kind, required, same)
        point = [c.value for c in self._inside() if c.kind == "coordinates"]
        if point and set(ordered_tokens(arg)) & self.lex.coordinate_words.get("point", frozenset()):
            return ArgOptions(arg, required, kind, tuple(point), typed=True, closed=True)  # "location": "45.5,-73.5"
        if required:
            return ArgOptions(arg, True, kind)
        cued = [
            c for c in self._inside() if self._cued(c, arg, optional=True, roles=False) and self._fits_type(c, kind)
        ]
        return self._optional(arg, kind, [str(c.value) if c.is_number else c.value for c in cued], same)

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
            if self._cued(c, arg, optional=not required) or (sole and self._tie(c, arg) >= self._strongest(c))
        ]
        chosen = cued if not required else cued + [c for c in pool if c not in cued]
        rendered: list[Any] = []
        for c in chosen:
            rendered += [v for v in self._forms(c, fmt) if v is not None and v not in rendered]
        if not required:
            return self._optional(arg, kind, rendered, same, typed=True)
        missing = None if rendered or self._upstream_fits(kind, arg) else f"no {_kind_words(fmt.kind)} in the request"
        refs = same if rendered else ()
        return ArgOptions(arg, True, kind, tuple(rendered), refs, typed=True, closed=bool(rendered), missing=missing)

    def _forms(self, c: Candidate, fmt: DateFormat) -> list[Any]:
        """A written date or time in the argument's format; without a declared format a value the user
        wrote in digits or as a clock ("10/05/2023", "10:00 AM", "2022-12-01 10:00") is kept as written."""
        forms: list[Any] = []
        if c.kind == "time":
            if not fmt.declared:
                forms.append(c.value)
            forms.append(fmt.render("", c.iso) if fmt.kind == "time" else None)
            return forms
        clock = c.value[11:16] if c.kind == "datetime" else (self._clock(c) if fmt.kind != "date" else None)
        full = c.kind == "datetime" and len(c.value) > 19 and fmt.kind == "datetime"  # with its offset already
        if (not fmt.declared or full) and c.value != c.iso and (c.kind == "datetime" or _numeric(c.value)):
            forms.append(c.value)
        zone = stated_zone(self.values.text, self.lex) if fmt.kind == "datetime" else ""
        forms.append(fmt.render(c.iso, clock, zone) if fmt.kind != "time" else fmt.render("", clock))
        return forms

    def _sole(self, arg: str, clocks: bool) -> bool:
        """`arg` is the only argument of its tool that takes a date (a time when `clocks`)."""
        dated = [a for a in self._args if (k := self._kinds.get(a)) is not None and k.is_date]
        same_kind = [a for a in dated if (self._kinds[a].kind == "time") == clocks]
        return same_kind == [arg]

    def _enum(
        self, arg: str, schema: dict[str, Any], kind: ArgKind, required: bool, same: tuple[str, ...]
    ) -> ArgOptions:
        options = list(schema.get("enum") or [])
        named = [o for o in options if isinstance(o, str) and self._names_option(o)]
        if {str(o).lower() for o in options} == {"true", "false"}:  # a flag written as an enum of strings
            flag = self._flag_value(arg)
            named = [o for o in options if flag is not None and str(o).lower() == str(flag).lower()]
        numbers = [o for o in options if _number_of(o) is not None]
        if numbers:
            cued = [c.value for c in self._inside() if c.is_number and self._cued(c, arg, optional=not required)]
            named += [o for o in numbers if _number_of(o) in cued and o not in named]
        if len(named) == 1:
            return ArgOptions(arg, required, kind, (named[0],), typed=True, closed=True)
        if required:
            return ArgOptions(arg, True, kind)
        return self._optional(arg, kind, [], same)  # none or several options named: not clear, left out

    def _flag(self, arg: str, kind: ArgKind, required: bool, same: tuple[str, ...]) -> ArgOptions:
        value = self._flag_value(arg)
        if value is None:
            return ArgOptions(arg, True, kind) if required else self._optional(arg, kind, [], same)
        return ArgOptions(arg, required, kind, (value,), typed=True, closed=True)

    def _shaped(
        self, arg: str, kind: ArgKind, required: bool, same: tuple[str, ...], keywords: list[str]
    ) -> ArgOptions:
        """An identifier, an e-mail address, a URL, a phone number: values of that shape only (quoted or
        not); a bare number or quoted text is an identifier only when named one ("customer 4711"); an
        identifier also takes the keywords its description offers ("primary")."""
        pool = self._inside()
        if required and not any(self._shaped_as(c, kind) for c in pool):
            pool = list(self.values.candidates)
        inside = [c for c in pool if c.written and self._shaped_as(c, kind)]
        cued = [c for c in inside if self._cued(c, arg, optional=not required)]
        if kind.is_identifier:
            inside = [c for c in inside if c in cued or not _named_only(c)]
        if not required:
            return self._optional(arg, kind, [c.value for c in cued], same, typed=True)
        chosen = cued + [c for c in inside if c not in cued]
        literal = [str(c.value) if kind.is_identifier and c.is_number else c.value for c in chosen]
        literal = list(dict.fromkeys([*literal, *keywords]))
        missing = None
        if not literal and not same and not self._upstream_fits(kind, arg):
            missing = f"the request gives no {_kind_words(kind.kind)} for it"
        closed = bool(literal) or bool(same)  # a literal of its shape, or an earlier output named like it
        return ArgOptions(arg, True, kind, tuple(literal), same, typed=True, closed=closed, missing=missing)

    @staticmethod
    def _shaped_as(c: Candidate, kind: ArgKind) -> bool:
        shape = _shape(c)
        if kind.is_identifier:  # quoted words ("'Design review'") are a name, never an id
            return (shape in _ID_SHAPES and shape != "quoted") or (c.is_number and float(c.value).is_integer())
        return shape == kind.kind

    def _number(
        self, arg: str, schema: dict[str, Any], kind: ArgKind, required: bool, same: tuple[str, ...]
    ) -> ArgOptions:
        axis = next((a for a, words in self.lex.coordinate_words.items() if set(ordered_tokens(arg)) & words), "")
        point = [c.value for c in self._inside() if axis and c.kind == axis]
        if point:  # "within 5 km of 45.5017,-73.5673": its latitude, its longitude
            return ArgOptions(arg, required, kind, tuple(point), typed=True, closed=True)
        if required:
            has = any(c.is_number for c in self.values.candidates)
            missing = None if has or same or self._upstream_fits(kind, arg) else "the request gives no number for it"
            return ArgOptions(arg, True, kind, missing=missing)
        cued = [c.value for c in self._inside() if c.is_number and self._cued(c, arg, optional=True)]
        if kind.kind == "integer":
            cued = [v for v in cued if float(v).is_integer()]
        return self._optional(arg, kind, cued, same, typed=True)

    def _optional(
        self, arg: str, kind: ArgKind, values: list[Any], same: tuple[str, ...], *, typed: bool = True
    ) -> ArgOptions:
        kept: tuple[Any, ...] = ()
        for value in values:  # (lists are values too: no set, no dict)
            if value not in kept:
                kept = (*kept, value)
        supported = bool(kept or same)
        return ArgOptions(arg, False, kind, kept, same, typed=typed, closed=True, supported=supported)

    # evidence -----------------------------------------------------------------------------------------
    def _inside(self) -> list[Candidate]:
        span = self.span
        return [c for c in self.values.candidates if span is None or c.start < 0 or span[0] <= c.start < span[1]]

    def _tie(self, c: Candidate, arg: str, *, roles: bool = True) -> float:
        """How strongly the request ties a value to an argument: words of its name right before the value
        (nearer counts more; only words after the value before it: "'Budget sync' meeting to Room 4B" does
        not tie "Room" to `syncToken`), a role word that fits it, a word of its name right after it. Words
        like "to" count only for an argument named by them alone."""
        w = weights().evidence
        named = {t for t in name_tokens(arg) if len(t) > 1}
        tokens = {t for t in named if t not in self.lex.stopwords} or named
        stems = {self.lex.stem(t) for t in tokens if len(t) > 2}
        cue = self._near_cue(c)
        score = 0.0
        for back, word in enumerate(reversed(cue[-3:])):
            if word in tokens or (len(word) > 2 and self.lex.stem(word) in stems):
                score += max(w["cue_near"] - back, 1.0)
                if back == 0 and len(tokens) == 1:
                    score += w["exact"]  # the argument's whole name: `reference` before `capturePspReference`
        if roles and cue and role_match(cue[-1], tokens, self.lex):
            score += w["role"]
        if cue and cue[-1] in self.lex.naming_words and tokens & self.lex.name_args:
            score += w["role"]  # "called 'Digest'" → name
        words = ordered_tokens(arg)
        cut = next((i for i, word in enumerate(words) if word in self.lex.denominators), len(words))
        heads = {self.lex.stem(word) for word in words[:cut]}  # `max_price_per_night`: "4 nights" is no price
        if c.tail and c.tail not in self.lex.stopwords and self.lex.stem(c.tail) in heads & (stems | {c.tail}):
            score += w["tail"]  # ("ana@x.io from billing@y.io": "from" after a value belongs to the next one)
        return score

    def _near_cue(self, c: Candidate) -> list[str]:
        """The words right before a value, back to the value written before it (at most 3)."""
        if c.start < 0:
            return c.cue.split()[-3:]
        before = [  # (a capitalised word may be the cue itself: "the HTML '<h1>Hi</h1>'")
            v.end
            for v in self.values.candidates
            if v.written and v.kind not in ("ngram", "phrase") and 0 <= v.end <= c.start
        ]
        since = max(before, default=0)
        segment = self.values.text[max(since, c.start - 48) : c.start]
        words = re.findall(r"[A-Za-z]+", lexicon_for(segment).glossed(segment))  # "主题“…”" → subject
        return [word.lower() for word in words[-3:]]

    def _cued(self, c: Candidate, arg: str, *, optional: bool = False, roles: bool = True) -> bool:
        """The value is tied to this argument at least as strongly as to any other of the node's tool (and,
        for an optional argument, at least `evidence.optional_min`). Without `roles`, by its own name only
        (free text: "to Room 4B" says nothing about `timeMax`)."""
        score = self._tie(c, arg, roles=roles)
        floor = weights().evidence["optional_min"] if optional else 0.0
        return score > 0 and score >= floor and score >= self._strongest(c)

    def _strongest(self, c: Candidate) -> float:
        """The strongest tie of a value to any argument of the node's tool (0: tied to none)."""
        key = id(c)
        if key not in self._best:
            self._best[key] = max((self._tie(c, other) for other in self._args), default=0.0)
        return self._best[key]

    def _names_option(self, option: str) -> bool:
        """The request's words name an enum option: its words in a row (plurals allowed), or an upper-case
        code of up to four letters that starts a word ("EUR" ← "euros")."""
        words = ordered_tokens(option)
        if not words or all(w in self.lex.stopwords for w in words):  # "all" in "an all-day event" names nothing
            return False
        said = [_singular(w) for w in self.words]
        wanted = [_singular(w) for w in words]
        if any(said[i : i + len(wanted)] == wanted for i in range(len(said) - len(wanted) + 1)):
            return True
        code = option.lower()
        return (
            option.isupper()
            and option.isalpha()
            and 2 < len(option) <= 4
            and any(w.startswith(code) and len(w) <= len(code) + 3 for w in self.words)
        )

    def _flag_value(self, arg: str) -> bool | None:
        """True when the request uses every distinctive word of a boolean's name ("non-stop" →
        `nonStop`), False when a negation comes right before them; None when it does not use them."""
        lex = self.lex
        words = [w for w in ordered_tokens(arg) if w not in lex.flag_words and w not in lex.stopwords]
        words = [w for w in words if w not in lex.action_verbs] or words
        if not words:
            return None
        stems = [lex.stem(w) for w in self.words]
        positions = []
        for word in words:
            stem = lex.stem(word)
            if stem not in stems:
                return None
            positions.append(stems.index(stem))
        first = min(positions)
        before = set(self.words[max(0, first - 2) : first]) - set(words)
        return not bool(before & lex.negations)

    def _same_named_refs(self, arg: str, schema: dict[str, Any]) -> tuple[str, ...]:
        """Earlier outputs named like the argument (any naming style), of a type that fits it."""
        wanted = tuple(self.lex.stem(w) for w in ordered_tokens(arg))
        kind = str(schema.get("type", "")) if isinstance(schema.get("type"), str) else ""
        refs = []
        for up in self.upstream:
            for path, field_kind in up.tool.output_fields:
                leaf = path.rsplit(".", 1)[-1]
                if tuple(self.lex.stem(w) for w in ordered_tokens(leaf)) == wanted and fits(field_kind, kind):
                    refs.append(f"${up.node_id}.{path}")
        return tuple(refs)

    def _upstream_fits(self, kind: ArgKind, arg: str = "") -> bool:
        """An earlier node could supply the value: it declares no output (nothing is known), or an output
        field of a fitting type that shares a word with the argument's name."""
        want = {"number": "number", "integer": "integer"}.get(kind.kind, "string")
        words = {self.lex.stem(w) for w in ordered_tokens(arg)}
        for up in self.upstream:
            if not up.tool.output_fields and not up.tool.output_type:
                return True
            for path, field_kind in up.tool.output_fields:
                leaf = {self.lex.stem(w) for w in ordered_tokens(path.rsplit(".", 1)[-1])}
                if fits(field_kind, want) and leaf & words:
                    return True
        return False

    def _clock(self, c: Candidate) -> str | None:
        """The time written nearest after a date (its clock), if any."""
        times = [t for t in self.values.candidates if t.kind == "time" and t.iso and t.start >= c.end]
        return min(times, key=lambda t: t.start).iso if times else None

    def _fits_type(self, c: Candidate, kind: ArgKind) -> bool:
        if kind.kind == "array":
            return isinstance(c.value, list)
        if kind.kind == "object":
            return isinstance(c.value, dict)
        return (c.is_string and c.kind in _TEXT_KINDS) or (c.is_number and c.written)  # "3-day" → "3"


def missing_inputs(options: Mapping[str, ArgOptions]) -> dict[str, str]:
    """Argument → why it is missing, for the required arguments nothing can fill."""
    return {name: o.missing for name, o in options.items() if o.required and o.missing}


_SHAPES = (
    ("email", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("url", re.compile(r"(?:https?://|www\.)\S+|[\w-]+(?:\.[\w-]+)+/\S*")),
    ("phone", re.compile(r"\+?[\d\s().-]{7,20}")),
)


def _shape(c: Candidate) -> str:
    """What a value looks like whatever found it: a quoted '123-456-7890' is a phone number."""
    if c.kind in ("email", "url", "phone", "code"):
        return c.kind
    if c.is_number:
        return "number"
    text = str(c.value).strip() if c.is_string else ""
    for kind, pattern in _SHAPES:
        if pattern.fullmatch(text) and (kind != "phone" or sum(ch.isdigit() for ch in text) >= 7):
            return kind
    if c.kind == "quoted" and " " not in text and any(ch.isdigit() for ch in text):
        return "code"
    return c.kind


def _named_only(c: Candidate) -> bool:
    """A value that is an identifier only when the request names it one: a bare number, quoted words."""
    return c.is_number or (c.kind == "quoted" and _shape(c) == "quoted")


def _singular(word: str) -> str:
    """A plural's singular by its English ending only ("euros" → "euro", "classes" → "class"): enum options
    are matched closely, "named" never names the option "name"."""
    if word.endswith("es") and word[:-2].endswith(("s", "x", "ch", "sh")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def _numeric(value: Any) -> bool:
    return isinstance(value, str) and bool(re.fullmatch(r"[\d/.\-: T]+", value))


def _number_of(option: Any) -> float | None:
    if isinstance(option, bool):
        return None
    if isinstance(option, (int, float)):
        return float(option)
    if isinstance(option, str) and re.fullmatch(r"-?\d+(?:\.\d+)?", option):
        return float(option)
    return None


def _kind_words(kind: str) -> str:
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

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
- an earlier node outputs a field named like it, or (an identifier) created or found the thing it names.

An optional argument its schema marks deprecated is never written (its replacement is), nor one it marks
as the service's own (read-only, output only).

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
from dataclasses import replace
from typing import Any

from planner.arg_options import (
    ArgOptions,
    one_date_one_field,
    one_option_one_argument,
    one_thing_one_id,
    one_value_one_name,
    plain_text_not_markup,
    taken_by_required,
    unwritable,
)
from planner.argkinds import ArgKind, classify, described_options, option_glosses, ordered_tokens
from planner.catalog import ToolDef
from planner.countries import CountryCode, countries_named, country_format
from planner.dates import DateFormat, stated_zone
from planner.lexicon import lexicon
from planner.list_size import list_size
from planner.lookups import description_keywords, is_lookup, name_verbs, nouns
from planner.measures import declared_measure, declared_unit
from planner.money import amount_fields, in_declared_unit, money_in
from planner.request_words import RequestWords
from planner.selectors import selector, selector_options
from planner.slot_candidates import fits_string
from planner.ties import Ties
from planner.untied import place_untied
from planner.upstream import Upstream, could_supply, entity_id_refs, same_named_refs
from planner.value_shapes import (
    ADDRESS_KINDS,
    clock_named_id,
    fits_type,
    identified_things,
    named_only,
    number_of,
    numeric,
    opens_name,
    shaped_as,
)
from planner.values import Candidate, RequestValues


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

    def node(self, tool: ToolDef) -> dict[str, ArgOptions]:
        out = {arg: self.argument(tool, arg) for arg in tool.arg_names()}
        one_option_one_argument(out, self.said.heard)
        one_date_one_field(out, tool.properties, clock=any(c.kind in ("time", "datetime") for c in self._inside()))
        one_thing_one_id(out, {a: self._thing(a) for a, o in out.items() if o.kind.is_identifier})
        taken_by_required(out)
        written = frozenset(v for up in self.upstream for v in up.args.values() if isinstance(v, str))
        place_untied(out, tool, self._inside(), self.ties, self.lex, lists=self._lists, searched=written)
        one_value_one_name(out)  # (after the untied placement: it may offer the value twice too)
        plain_text_not_markup(out, self.lex.markup_fields, self.lex.plain_fields)
        self._money(tool, out)
        for arg, options in out.items():
            schema = tool.properties.get(arg)
            if self.defaults and not options.supported and isinstance(schema, dict) and "default" in schema:
                out[arg] = ArgOptions(arg, False, options.kind, (schema["default"],), typed=True, closed=True)
        return out

    def _thing(self, arg: str) -> frozenset[str]:
        """The stems of what an identifier names: `project_gid` and `data.project` → {project} (the last word
        of a longer name is its id word, whatever its spelling); `id` → {}."""
        words = ordered_tokens(arg.rpartition(".")[2])
        words = words[:-1] if len(words) > 1 else [w for w in words if w not in self.lex.identifier_words]
        return frozenset(self.lex.stem(w) for w in words)

    def _names_the_tool(self, option: str) -> bool:
        """Every word of an enum option is a noun of the tool's own name (`BOOKS` of `books_volumes_list`)."""
        words = [self.lex.stem(w) for w in ordered_tokens(option)]
        return bool(words) and all(w in self.ties.entity for w in words)

    def _money(self, tool: ToolDef, out: dict[str, ArgOptions]) -> None:
        """The one sum of money the step writes fills the least nested amount object: its currency code
        and its number in the field's declared unit (planner/money.py)."""
        objects = amount_fields(tool.arg_names(), tool.properties)
        if not objects:
            return
        money = money_in(self.values, self.span)
        shallowest = min(parent.count(".") for parent in objects)
        chosen = [fields for parent, fields in objects.items() if parent.count(".") == shallowest]
        if len(money) != 1 or len(chosen) != 1:
            return  # no sum, or which sum goes where is not clear
        currency, number = chosen[0]
        options = tool.properties.get(currency) or {}
        if options.get("enum") and money[0].currency not in options["enum"]:
            return
        value = in_declared_unit(money[0], tool.properties.get(number))
        if value is None:
            return
        for arg, written in ((currency, money[0].currency), (number, value)):
            current = out[arg]
            out[arg] = replace(current, values=(written,), refs=(), typed=True, closed=True, supported=True)

    # one argument -------------------------------------------------------------------------------------
    def argument(self, tool: ToolDef, arg: str, *, required: bool | None = None) -> ArgOptions:
        """`required`: decide it as a required argument whatever the tool says (a field its object needs)."""
        entity = frozenset(self.lex.stem(w) for w in nouns(tool.name, self.lex))
        self._tool_verbs = {self.lex.stem(v) for v in name_verbs(tool.name, self.lex)}
        self._properties = tool.properties
        self._lists = is_lookup(tool, self.lex)
        self._listed = set(entity) | {  # what the tool lists: the nouns of its name, its output's list fields
            self.lex.stem(w) for path, kind in tool.output_fields if kind == "array" for w in ordered_tokens(path)
        }
        if self.ties.args != tool.arg_names() or self.ties.entity != entity:
            self._kinds = {a: classify(a, tool.properties.get(a)) for a in tool.arg_names()}
            self.ties.for_args(tool.arg_names(), entity, self._kinds)
        schema = tool.properties.get(arg)
        schema = schema if isinstance(schema, dict) else {}
        kind = classify(arg, schema)
        required = arg in tool.required if required is None else required
        if arg in self.links:
            if schema.get("type") == "array":  # a list of identifiers takes the one its lookup found
                return ArgOptions(arg, required, kind, tuple([r] for r in self.links[arg]), typed=True, closed=True)
            return ArgOptions(arg, required, kind, refs=self.links[arg], typed=True, closed=True)
        if (sel := selector(schema)) is not None and (required or sel.writes):  # `part`, `updateMask`
            return ArgOptions(arg, required, kind, selector_options(tool, arg, sel), typed=True, closed=True)
        if not required and (unwritable(schema, arg) or arg in self.ambient):  # (a deprecated one's replacement
            # is the one to write; a parameter every tool takes alike is about the call, not the action)
            return ArgOptions(arg, False, kind, typed=True, closed=True, supported=False, unwritable=True)
        # (an optional argument takes no same-named output: a filler more often than not; only the id of the
        # thing an earlier node created or found, when the argument names that thing: `segment_id`)
        same = same_named_refs(self.upstream, arg, schema, self.lex) if required else ()
        if not required and kind.is_identifier:
            same = entity_id_refs(self.upstream, arg, self.lex)
        if kind.is_date:
            return self._date(arg, kind, required, same)
        if kind.kind == "enum":
            return self._enum(arg, schema, kind, required, same)
        if kind.kind == "boolean":
            return self._flag(arg, kind, required, same)
        if (country := country_format(schema, arg.rpartition(".")[2])) is not None:
            return self._country(arg, kind, required, same, country)
        items = schema.get("items")
        if required and kind.kind == "array" and isinstance(items, dict) and isinstance(items.get("enum"), list):
            return self._enum_list(arg, items["enum"], kind)
        if kind.is_identifier or kind.kind in ("email", "url", "phone"):
            return self._shaped(
                arg, kind, required, same, description_keywords(schema, arg) if kind.is_identifier else [], schema
            )
        if kind.kind in ("number", "integer"):
            return self._number(arg, schema, kind, required, same)
        named_by = set(ordered_tokens(arg.rpartition(".")[2]))
        if kind.kind == "text" and named_by & (self.lex.language_fields | self.lex.media_fields):
            code = (  # "English only" → `langRestrict: en`, "as PDF" → `mimeType: application/pdf`
                self.said.language_named() if named_by & self.lex.language_fields else self.said.media_type_named()
            )
            if code is not None:
                return ArgOptions(arg, required, kind, (code,), typed=True, closed=True)
        point = [c.value for c in self._inside() if c.kind == "coordinates"]
        if point and set(ordered_tokens(arg)) & self.lex.coordinate_words.get("point", frozenset()):
            return ArgOptions(arg, required, kind, tuple(point), typed=True, closed=True)  # "location": "45.5,-73.5"
        if required:
            return ArgOptions(arg, True, kind)
        if kind.kind == "array" and self._lists_ids(arg, schema):
            ids = [c.value for c in self._inside() if shaped_as(c, ArgKind("identifier"))
                   and self.ties.cued(c, arg, optional=True) and self._tied_only_to(c, arg)]  # fmt: skip
            return self._optional(arg, kind, [ids] if ids else [], same)  # "to device 0d18…" → `device_ids: ["0d18…"]`
        cued = [
            c
            for c in self._inside()
            if self.ties.cued(c, arg, optional=True, roles=False)
            and fits_type(c, kind)
            and (c.kind != "ngram" or "." not in arg)  # a field inside an object takes no bare word of the request
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
            missing = f"no {_kind_words(fmt.kind)} in the request"
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

    def _enum(
        self, arg: str, schema: dict[str, Any], kind: ArgKind, required: bool, same: tuple[str, ...]
    ) -> ArgOptions:
        options = list(schema.get("enum") or described_options(schema))
        named = self.said.longest([o for o in options if isinstance(o, str) and self.said.names_option(o, arg)])
        if not required:  # "Search Google Books": the word names the thing the tool acts on, not `printType: BOOKS`
            named = [o for o in named if not self._names_the_tool(o)]
        if not named:  # "so she can edit it" → `role: writer`
            named = [o for o in options if isinstance(o, str) and self.said.names_by_action(o, self._tool_verbs)]
        if not named:  # "the last four weeks" → `short_term`, described as "approximately last 4 weeks"
            glossed = self.said.named_by_gloss(option_glosses(schema, [o for o in options if isinstance(o, str)]))
            named = [glossed] if glossed is not None else []
        if {str(o).lower() for o in options} == {"true", "false"}:  # a flag written as an enum of strings
            flag = self.said.flag_value(arg)
            named = [o for o in options if flag is not None and str(o).lower() == str(flag).lower()]
        numbers = [o for o in options if number_of(o) is not None]
        if numbers:
            cued = [c.value for c in self._inside() if c.is_number and self.ties.cued(c, arg, optional=not required)]
            named += [o for o in numbers if number_of(o) in cued and o not in named]
        if len(named) == 1:
            return ArgOptions(arg, required, kind, (named[0],), typed=True, closed=True)
        if required:
            return ArgOptions(arg, True, kind)
        return self._optional(arg, kind, [], same)  # none or several options named: not clear, left out

    def _enum_list(self, arg: str, options: list[Any], kind: ArgKind) -> ArgOptions:
        """A required list of an enum's options: the options the request names, in the schema's order ("tracks
        by Miles Davis" → `type: ["track"]`); left to the model when it names none. (Not for an optional list:
        the request's verb would name options nobody asked to filter by, "Schedule …" → `status: [scheduled]`.)"""
        named = self.said.longest([o for o in options if isinstance(o, str) and self.said.names_option(o, arg)])
        if named:
            return ArgOptions(arg, True, kind, ([o for o in options if o in named],), typed=True, closed=True)
        return ArgOptions(arg, True, kind)

    def _flag(self, arg: str, kind: ArgKind, required: bool, same: tuple[str, ...]) -> ArgOptions:
        value = self.said.flag_value(arg)
        if value is None:
            return ArgOptions(arg, True, kind) if required else self._optional(arg, kind, [], same)
        return ArgOptions(arg, required, kind, (value,), typed=True, closed=True)

    def _shaped(
        self,
        arg: str,
        kind: ArgKind,
        required: bool,
        same: tuple[str, ...],
        keywords: list[str],
        schema: dict[str, Any],
    ) -> ArgOptions:
        """An identifier, an e-mail address, a URL, a phone number: values of that shape only (quoted or
        not), within the schema's length and `pattern` (a Twilio `Sid` "^MB…" is no conversation's "CH…");
        a bare number or quoted text is an identifier only when named one ("customer 4711"); an identifier
        also takes the keywords its description offers ("primary")."""

        things = identified_things(schema, self.lex) if kind.is_identifier else frozenset()

        def usable(pool: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
            named = [c for c in pool if clock_named_id(c, things, self.lex)]  # "nodes 12:34 and 12:35"
            shaped = [
                c
                for c in pool
                if c.written
                and (shaped_as(c, kind) or c in named)
                and fits_string(str(c.value) if c.is_number else c.value, schema)
            ]
            cued = [c for c in shaped if c in named or self.ties.cued(c, arg, optional=not required)]
            if kind.is_identifier:  # a bare number or quoted text only when named one; no first word of a name
                shaped = [c for c in shaped if (c in cued or not named_only(c)) and not opens_name(c, self.values)]
            return shaped, cued

        inside, cued = usable(self._inside())
        if required and not inside:  # "In course d:bio-10, create … worth twenty points": given before the step
            inside, cued = usable(list(self.values.candidates))
        if not required:
            if not cued and kind.kind in ADDRESS_KINDS and len(inside) == 1 and self._only_of_kind(kind):
                cued = inside  # the step's one e-mail address, URL or phone number, for the tool's one argument of it
            said = [k for k in keywords if self.said.keyword_for(k, arg)]  # "with me as the owner" → "me"
            joined = [",".join(str(c.value) for c in cued)] if _comma_list(schema) and len(cued) > 1 else []
            joined = [text for text in joined if fits_string(text, schema)]
            text = schema.get("type") == "string"  # "reply to comment 93102" → `comment_id: "93102"`
            found = [str(c.value) if c.is_number and text else c.value for c in cued]
            return self._optional(arg, kind, [*joined, *found, *said], same, typed=True)

        def written(cands: list[Candidate]) -> list[Any]:
            return [str(c.value) if c.is_number else c.value for c in cands]  # (ids and phones are text)

        # what the request ties to it, then the description's keywords ("primary"); values of its shape only
        # when nothing is tied to it ("给项目 1204455667788 …，标题“第6周进展”": the project's id is the number)
        # (with a keyword of its own, only a value tied to it: "mail from a@x.io under the label Label_12"
        # leaves `userId` its "me")
        others = [] if cued or keywords else written(inside)
        literal = list(dict.fromkeys([*written(cued), *keywords, *others]))
        tied = written(cued) or written(inside)
        if _comma_list(schema) and len(tied) > 1 and fits_string(listed := ",".join(dict.fromkeys(tied)), schema):
            literal.insert(0, listed)  # "artists 0TnO… and 3WrF…" → "0TnO…,3WrF…"
        missing = None
        if not literal and not same and not could_supply(self.upstream, kind, arg, self.lex):
            missing = f"the request gives no {_kind_words(kind.kind)} for it"
        closed = bool(literal) or bool(same)  # a literal of its shape, or an earlier output named like it
        return ArgOptions(arg, True, kind, tuple(literal), same, typed=True, closed=closed, missing=missing)

    def _country(
        self, arg: str, kind: ArgKind, required: bool, same: tuple[str, ...], code: CountryCode
    ) -> ArgOptions:
        """An ISO 3166-1 country code: the code of the one country the step names ("available in Germany" →
        "DE"; "in the UK" → `country:gb` in a filter whose example writes `country:fr`), several joined as
        the example joins them; left to the model (required) or out (optional) when it names none, or several
        where the argument takes one."""
        named = countries_named(
            (str(c.value) for c in self._inside() if c.kind in ("phrase", "code", "ngram")), self.lex.country_aliases
        )
        if (value := code.render(named)) is not None:
            return ArgOptions(arg, required, kind, (value,), typed=True, closed=True)
        return ArgOptions(arg, True, kind) if required else self._optional(arg, kind, [], same)

    def _tied_only_to(self, c: Candidate, arg: str) -> bool:
        """No other argument of the tool is tied to the value as strongly (`addLabelIds`, `removeLabelIds`
        and "the label Label_12": which one is not said)."""
        score = self.ties.tie(c, arg)
        return all(self.ties.tie(c, other) < score for other in self.ties.args if other != arg)

    def _lists_ids(self, arg: str, schema: dict[str, Any]) -> bool:
        """A list of string identifiers by its name (`device_ids`, `memberGids`), its items untyped or strings."""
        items = schema.get("items")
        if isinstance(items, dict) and items.get("type", "string") != "string":
            return False
        words = ordered_tokens(arg.rpartition(".")[2])
        return len(words) > 1 and words[-1].endswith("s") and words[-1] in self.lex.identifier_words

    def _only_of_kind(self, kind: ArgKind) -> bool:
        """No other argument of the node's tool takes values of this kind."""
        return sum(1 for k in self._kinds.values() if k.kind == kind.kind) == 1

    def _number(
        self, arg: str, schema: dict[str, Any], kind: ArgKind, required: bool, same: tuple[str, ...]
    ) -> ArgOptions:
        axis = next((a for a, words in self.lex.coordinate_words.items() if set(ordered_tokens(arg)) & words), "")
        point = [c.value for c in self._inside() if axis and c.kind == axis]
        if point:  # "within 5 km of 45.5017,-73.5673": its latitude, its longitude
            return ArgOptions(arg, required, kind, tuple(point), typed=True, closed=True)
        declared = declared_unit(schema)
        measured = declared_measure(schema, self._inside()) if declared is not None else []
        # "within 5 km" → `radius: 5000` ("Unit in meters"), when no other argument of the tool measures the same
        if measured and declared is not None and any(
            (other := declared_unit(s)) is not None and other[0] == declared[0]
            for a, s in self._properties.items()
            if a != arg and isinstance(s, dict)
        ):
            measured = []
        if measured:
            return ArgOptions(arg, required, kind, tuple(measured), typed=True, closed=not required, supported=True)
        if required:
            has = any(c.is_number for c in self.values.candidates)
            supplied = has or bool(same) or could_supply(self.upstream, kind, arg, self.lex)
            missing = None if supplied else "the request gives no number for it"
            return ArgOptions(arg, True, kind, missing=missing)
        cued = [c.value for c in self._inside() if c.is_number and self.ties.cued(c, arg, optional=True)]
        if kind.kind == "integer":
            cued = [v for v in cued if float(v).is_integer()]
        sized = set(ordered_tokens(arg)) & self.lex.limit_args
        if not cued and kind.kind in ("integer", "number") and self._lists and sized:
            cued = list_size(self._inside(), self.values.text, self.ties, self._listed)  # "the ten newest files"
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

    # the node's step --------------------------------------------------------------------------------
    def _inside(self) -> list[Candidate]:
        span = self.span
        return [c for c in self.values.candidates if span is None or c.start < 0 or span[0] <= c.start < span[1]]

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


_COMMA_LIST = re.compile(r"\bcomma[- ]?(?:separated|delimited)\b|\bseparated by (?:a )?commas?\b", re.IGNORECASE)


def _comma_list(schema: Mapping[str, Any]) -> bool:
    """A string its description declares a comma-separated list ("A comma-separated list of the Spotify IDs"):
    several values tied to it are written joined, in the request's order."""
    return schema.get("type", "string") == "string" and bool(_COMMA_LIST.search(str(schema.get("description", ""))))


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

"""Evidence for arguments of every kind but dates: an enum option (or list of them) or a flag the request's
words name, a country code, a shaped value (an identifier, e-mail address, URL or phone number: its shape
only, tied to the argument), and a number (a coordinate, a measure in the declared unit, a count).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from planner.arg_options import ArgOptions
from planner.argkinds import ArgKind, described_options, option_glosses, ordered_tokens
from planner.countries import CountryCode, countries_named
from planner.evidence_step import StepEvidence, kind_words
from planner.list_size import list_size
from planner.measures import declared_measure, declared_unit
from planner.slot_candidates import fits_string
from planner.upstream import could_supply
from planner.value_shapes import (
    ADDRESS_KINDS,
    clock_named_id,
    examples_allow,
    identified_things,
    named_only,
    number_of,
    opens_name,
    shaped_as,
)
from planner.values import Candidate


class KindEvidence(StepEvidence):
    """The options of an enum, flag, country, shaped or number argument."""

    def _names_the_tool(self, option: str) -> bool:
        """Every word of an enum option is a noun of the tool's own name (`BOOKS` of `books_volumes_list`)."""
        words = [self.lex.stem(w) for w in ordered_tokens(option)]
        return bool(words) and all(w in self.ties.entity for w in words)

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

    def _enum_list(
        self, arg: str, options: list[Any], kind: ArgKind, required: bool, same: tuple[str, ...]
    ) -> ArgOptions:
        """A list of an enum's options: the options the request names, in the schema's order ("tracks by Miles
        Davis" → `type: ["track"]`, "delivered and bounced" → `metrics: ["delivered", "bounced"]`); a required
        one is left to the model when it names none. An optional list takes no option the tool's own verb or
        nouns name: the request's verb would name options nobody asked to filter by ("Schedule …" →
        `status: [scheduled]`)."""
        named = self.said.longest([o for o in options if isinstance(o, str) and self.said.names_option(o, arg)])
        if not required:
            named = [o for o in named if not self._names_the_tool(o) and not self._names_the_verb(o)]
        if named:
            return ArgOptions(arg, required, kind, ([o for o in options if o in named],), typed=True, closed=True)
        return ArgOptions(arg, True, kind) if required else self._optional(arg, kind, [], same)

    def _names_the_verb(self, option: str) -> bool:
        """An enum option whose one word is, by its stem, the tool's verb or a verb of the request ("Schedule
        the single send …" names no `status: scheduled` of the search that finds it)."""
        words = [self.lex.stem(w) for w in ordered_tokens(option)]
        verbs = self._tool_verbs | {self.lex.stem(w) for w in self.said.words if w in self.lex.action_verbs}
        return len(words) == 1 and words[0] in verbs

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
                and (not kind.is_identifier or examples_allow(c, schema))
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
            missing = f"the request gives no {kind_words(kind.kind)} for it"
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
        if not cued and kind.kind in ("integer", "number") and self._lists and sized and self._counts_listed(arg):
            cued = list_size(self._inside(), self.values.text, self.ties, self._listed)  # "the ten newest files"
        return self._optional(arg, kind, cued, same, typed=True)

    def _counts_listed(self, arg: str) -> bool:
        """`arg` is the limit that counts what the tool lists: with several limits (`maxResults`,
        `maxAttendees`), the ones whose other words name the results ("results", "entries") or the thing
        of the tool's name; any limit when none does."""

        def counts(a: str) -> bool:
            rest = [w for w in ordered_tokens(a) if w not in self.lex.limit_args]
            named = {self.lex.stem(w) for w in rest} <= self.ties.entity | self._result_words
            return all(w in self.lex.limit_args for w in ordered_tokens(a)) or named

        limits = [
            a for a in self.ties.args
            if set(ordered_tokens(a)) & self.lex.limit_args and (k := self._kinds.get(a)) is not None
            and k.kind in ("integer", "number")
        ]  # fmt: skip
        fitting = [a for a in limits if counts(a)]
        return not fitting or arg in fitting

    @property
    def _result_words(self) -> set[str]:
        """The stems of the one-word limit tails ("results", "hits", "entries"): words for what a list returns."""
        return {self.lex.stem(t) for t in self.lex.limit_tails if " " not in t}


_COMMA_LIST = re.compile(r"\bcomma[- ]?(?:separated|delimited)\b|\bseparated by (?:a )?commas?\b", re.IGNORECASE)


def _comma_list(schema: Mapping[str, Any]) -> bool:
    """A string its description declares a comma-separated list ("A comma-separated list of the Spotify IDs"):
    several values tied to it are written joined, in the request's order."""
    return schema.get("type", "string") == "string" and bool(_COMMA_LIST.search(str(schema.get("description", ""))))

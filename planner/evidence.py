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

`NodeEvidence` assembles a node and decides what each argument is; the rules of each kind are
planner/evidence_dates.py (dates and times) and planner/evidence_kinds.py (enums, flags, countries,
identifiers and addresses, numbers), over the state they share in planner/evidence_step.py.
"""

from __future__ import annotations

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
from planner.argkinds import ArgKind, classify, ordered_tokens
from planner.catalog import ToolDef
from planner.countries import country_format
from planner.evidence_dates import DateEvidence
from planner.evidence_kinds import KindEvidence
from planner.flat_args import list_item
from planner.lookups import description_keywords, is_lookup, name_verbs, nouns
from planner.money import amount_fields, in_declared_unit, money_in
from planner.selectors import selector, selector_options
from planner.untied import place_untied
from planner.upstream import entity_id_refs, same_named_refs
from planner.value_shapes import fits_type, shaped_as
from planner.values import Candidate


class NodeEvidence(DateEvidence, KindEvidence):
    """The options of every argument of one node."""

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
        # (an optional argument takes no same-named output: a filler more often than not; an identifier with
        # no same-named output takes the id of the thing an earlier node created or found, when the argument
        # names that thing: `segment_id`, `task_gid`)
        same = same_named_refs(self.upstream, arg, schema, self.lex) if required else ()
        if kind.is_identifier and not same:
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
        if kind.kind == "array" and isinstance(items, dict) and isinstance(items.get("enum"), list):
            return self._enum_list(arg, items["enum"], kind, required, same)
        if kind.kind == "array" and (item := self._shaped_item(arg, schema)) is not None:
            return self._shaped_list(arg, kind, required, same, item)
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

    def _shaped_item(self, arg: str, schema: dict[str, Any]) -> tuple[ArgKind, dict[str, Any]] | None:
        """The kind of a list's items when they are e-mail addresses, URLs or phone numbers (SendGrid's
        `emails`, "One or more … email addresses"): each item is such a value, whatever its schema names."""
        item = list_item(schema)
        if item is None or item.get("type", "string") != "string":
            return None
        kind = classify(arg, item)
        return (kind, item) if kind.kind in ("email", "url", "phone") else None

    def _shaped_list(
        self, arg: str, kind: ArgKind, required: bool, same: tuple[str, ...], item: tuple[ArgKind, dict[str, Any]]
    ) -> ArgOptions:
        """A list of shaped values: the values its items would take, as one list ("with email kim@orbit.io"
        → `emails: ["kim@orbit.io"]`)."""
        inside = self._inside()
        values = [  # none another argument is tied to as strongly ("the track spotify:track:…" is Spotify's
            # `uris`, the string, before its body's list `body_uris`)
            v
            for v in self._shaped(arg, item[0], required, (), [], item[1]).values
            if all(self._tied_only_to(c, arg) for c in inside if c.value == v)
        ]
        if not values and not any(k.kind == item[0].kind for k in self._kinds.values()):
            # the tool's one place for values of this kind takes every one its step writes
            values = [c.value for c in inside if c.written and shaped_as(c, item[0])]
        if not values:
            return ArgOptions(arg, True, kind) if required else self._optional(arg, kind, [], same)
        return ArgOptions(arg, required, kind, (values,), typed=True, closed=True)

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

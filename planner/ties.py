"""How strongly the request ties each of its values to an argument of one tool.

A value is tied to an argument by the words written right before it (a word of the argument's name,
nearer counting more; a role word that fits it: "from" → origin), or a word of its name right after it
("30 days" → `dueDays`). The weights are the lexicon's `evidence` weights (configs/lexicon/weights.yaml).
A value belongs to the argument it is tied to most strongly; the evidence rules (planner/evidence.py)
write an optional argument only with a value cued for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from planner.argkinds import ArgKind, ordered_tokens
from planner.flat_args import field_depth
from planner.lexicon import Lexicon, lexicon_for, weights
from planner.value_shapes import ADDRESS_KINDS, TIMED_KINDS, shaped_as
from planner.values import Candidate, RequestValues, ends_in_name, name_tokens, role_match


class Ties:
    """Ties of the request's values to the arguments of one tool at a time (`for_args` switches tools)."""

    def __init__(self, values: RequestValues, lex: Lexicon) -> None:
        self.values = values
        self.lex = lex
        self.args: tuple[str, ...] = ()
        self.entity: frozenset[str] = frozenset()
        self.dated: frozenset[str] = frozenset()  # the arguments that take dates or times only
        self.numeric: frozenset[str] = frozenset()  # ... numbers only
        self.kinds: dict[str, ArgKind] = {}
        self._best: dict[int, float] = {}
        self._all: dict[int, dict[str, float]] = {}

    def for_args(
        self,
        args: tuple[str, ...],
        entity: frozenset[str] = frozenset(),
        kinds: Mapping[str, ArgKind] | None = None,
    ) -> None:
        """Score against the arguments `args` of another tool (forgetting the strongest ties found so far);
        `entity`: the stems of the thing the tool acts on (the nouns of its name); `kinds`: what each
        argument takes (a value is not tied to an argument that cannot take it: a title to an end date)."""
        self.args, self.entity, self._best, self._all = args, entity, {}, {}
        kinds = kinds or {}
        self.kinds = dict(kinds)
        self.dated = frozenset(a for a, k in kinds.items() if k.is_date)
        self.numeric = frozenset(a for a, k in kinds.items() if k.kind in ("number", "integer"))

    def tie(self, c: Candidate, arg: str, *, roles: bool = True) -> float:
        """How strongly the request ties a value to an argument: words of its name right before the value
        (nearer counts more; only words after the value before it: "'Budget sync' meeting to Room 4B" does
        not tie "Room" to `syncToken`), a role word that fits it, a word of its name right after it. Words
        like "to" count only for an argument named by them alone."""
        w = weights().evidence
        field, _, parent = arg.rpartition(".")[::-1]  # a field of an object (planner/flat_args.py): its own name
        named = {t for t in name_tokens(field) if len(t) > 1}
        tokens = {t for t in named if t not in self.lex.stopwords} or named
        # the object a date field is in names its role ("from 10:00" → `start.dateTime`, not `end.timeZone`)
        around = {t for t in name_tokens(parent) if len(t) > 1} if parent and arg in self.dated else set()
        stems = {self.lex.stem(t) for t in tokens if len(t) > 2}
        cue = self._near_cue(c)
        score = 0.0
        verbs = self.lex.action_verbs | self.lex.mutating_verbs
        text = (kind := self.kinds.get(arg)) is not None and kind.kind == "text"
        back = 0  # words between the word and the value; connectors and verbs do not count
        content = [x for x in cue if x not in self.lex.stopwords]
        owner = content[-2] if len(content) > 1 and content[-1] in self.lex.identifier_words else ""
        # "my bookshelf with ID 2": the id word names the shelf's id, not `volumeId`'s
        owns = owner in tokens or self.lex.stem(owner) in stems or ends_in_name(owner, tokens)
        owned_elsewhere = bool(owner) and not owns
        for at in range(len(cue) - 1, -1, -1):  # ("name change to '王丽'", "the subject set to 'Hi'")
            word = cue[at]
            if back >= 3:
                break
            if owned_elsewhere and word in self.lex.identifier_words and tokens != {word}:  # (`reference` itself)
                back += 1
                continue
            if word in verbs and len(tokens) > 1 and not (at and cue[at - 1] in self.lex.determiners):
                continue  # the request's verb ("Add 'Review'") names no field `anyoneCanAddSelf`; after a
                # determiner the word is a noun ("the text 'Back soon'" → `responseBodyPlainText`)
            if len(tokens) > 1 and text and self.lex.stem(word) in self.entity:
                continue  # the thing the tool acts on ("an event 'Offsite'") names no text field `eventType`
            if at + 1 < len(cue) and cue[at + 1] == "of" and self._changed_to(c):
                back += 1  # "the location of my 'Budget sync' … to Room 4B": the value after "of" owns the field
                continue
            stem = self.lex.stem(word)
            if word in tokens or (len(word) > 2 and (stem in stems or same_root(stem, stems, w))):
                score += max(w["cue_near"] - back, 1.0)
                if back == 0 and len(tokens) == 1:
                    score += w["exact"]  # the argument's whole name: `reference` before `capturePspReference`
                back += 1
            elif ends_in_name(word, tokens) and word not in verbs:
                score += max(w["cue_near"] - back, 1.0)  # a compound ending in its name: "bookshelf 3" → `shelf`
                # (a verb is no compound: "rename my playlist" names no `name`)
                back += 1
            elif word not in self.lex.stopwords and word not in verbs:
                back += 1
        field_word = self._field_of(c) if cue and cue[-1] == "to" else ""
        if field_word and (field_word in tokens or self.lex.stem(field_word) in stems):
            score += w["cue_near"]  # "change the location of my meeting to Room 4B" → `location`
        # the role word right before the value; "for March 1 to March 8": the first of two dates joined by
        # "to" has the role "from"
        role = cue[-1] if cue and role_match(cue[-1], tokens | around, self.lex) else ""
        if not role and roles and self._opens_range(c) and role_match("from", tokens | around, self.lex):
            role = "from"
        if not role and roles and self._closes_between(c) and role_match("until", tokens | around, self.lex):
            role = "until"  # "between June 1 and June 30": the second value ends the range
        if roles and role:
            score += w["role"]
            holder = {t for t in name_tokens(parent.rpartition(".")[2]) if len(t) > 1} if parent else set()
            if holder and holder <= self.lex.role_words.get(role, frozenset()):
                score += w["exact"]  # the object is named by the role alone: `start` of `start.dateTime`
        if cue and tokens & self.lex.name_args and (cue[-1] in self.lex.naming_words or self._names_entity(c, cue)):
            score += w["role"]  # "called 'Digest'" → name; "the segment 'VIP'" → the segment's name
        words = ordered_tokens(field)
        cut = next((i for i, word in enumerate(words) if word in self.lex.denominators), len(words))
        heads = {self.lex.stem(word) for word in words[:cut]}  # `max_price_per_night`: "4 nights" is no price
        tail = c.tail if c.kind not in ADDRESS_KINDS else ""  # "jo@x.dev view-only": no `…ForView` address
        tail = "" if tail in self.lex.naming_words else tail  # "the single send named 'X'": X is the name
        tail_named = bool(tail) and (self.lex.stem(tail) in heads & (stems | {tail}) or ends_in_name(tail, tokens))
        counted = text and c.is_number and tail.endswith("s")  # "200 events" counts events: no event type
        if tail_named and tail not in self.lex.stopwords and not counted and not self._cues_next(c):
            score += w["tail"]  # ("ana@x.io from billing@y.io": "from" after a value belongs to the next one)
        elif len(words) > 1 and c.start >= 0 and self._followed_by(c, words):
            score += w["tail"] + w["exact"]  # "50 per page": the argument's whole name `per_page` after it
        return score

    def _opens_range(self, c: Candidate) -> bool:
        """A date or time followed by a range word ("to", "until", "through"; a dash) and another one of
        its kind: "March 1 to March 8", "10:00-11:00", "15:00到16:00"."""
        if c.start < 0 or c.kind not in TIMED_KINDS:
            return False
        for v in self.values.candidates:
            if v.written and v.kind in TIMED_KINDS and c.end < v.start <= c.end + 16:
                between = self.values.text[c.end : v.start]
                words = re.findall(r"[A-Za-z]+", lexicon_for(between).glossed(between).lower())
                dash = re.fullmatch(r"\s*[-–—~]\s*", between) is not None
                return dash or (len(words) == 1 and words[0] in self.lex.range_words)
        return False

    def _closes_between(self, c: Candidate) -> bool:
        """The second of two values of one kind written "between A and B" (dates, times or numbers): "due
        between June 1 and June 30, 2027", "between 10 and 20 seats"."""
        if c.start < 0 or not (c.kind in TIMED_KINDS or c.is_number):
            return False
        family = TIMED_KINDS if c.kind in TIMED_KINDS else None
        for v in self.values.candidates:
            same = v.kind in family if family is not None else v.is_number
            if not (v.written and same and 0 <= v.end < c.start <= v.end + 8):
                continue
            if self.values.text[v.end : c.start].strip().lower() != "and":
                continue
            words = re.findall(r"[A-Za-z]+", self.values.text[max(0, v.start - 16) : v.start].lower())
            if words and words[-1] == "between":
                return True
        return False

    def _field_of(self, c: Candidate) -> str:
        """The field a change names before its new value: "Change the location of my 'Budget sync' meeting to
        Room 4B" → "location" for Room 4B (the word before the sentence's "of", with "to" right before the
        value); "" when the request does not say it so."""
        if c.start < 0:
            return ""
        start = max(self.values.text.rfind(mark, 0, c.start) for mark in ".!?;")
        sentence = self.values.text[start + 1 : c.start]
        m = re.search(r"\b(?:the|its|their)\s+([A-Za-z]+)\s+of\b.*\bto\s*$", sentence, re.IGNORECASE)
        if m is None:
            return ""
        return m.group(1).lower()

    def _changed_to(self, c: Candidate) -> bool:
        """Another value of the sentence is what the field becomes ("… of my 'Budget sync' meeting to Room 4B")."""
        return any(
            v is not c and v.written and v.start > c.end and self._field_of(v) for v in self.values.candidates
        )

    def _cues_next(self, c: Candidate) -> bool:
        """The word after the value names the next value, written after it with at most a verb and "to"
        between: "droplets tagged env:staging" (the tag is env:staging, not "droplets"), "the 'Budget sync'
        meeting to Room 4B", "“周会”的地点改成“三楼会议室”" (the place becomes the new value)."""
        if c.start < 0:
            return False
        following = [v.start for v in self.values.candidates if v.written and v.kind != "ngram" and v.start >= c.end]
        if not following:
            return False
        segment = self.values.text[c.end : min(following)]
        if len(segment) > 40:
            return False
        if re.search(r"[,.;!?，。；！？]", segment):
            return False
        if segment.isascii():
            words = [w.lower() for w in re.findall(r"[A-Za-z]+", segment)]
            between = words[1:]
        else:  # a glossed word brings all its glosses ("地点" → "location place"): the first word is all of them
            pieces = [p for p in re.split(r"[^\x00-\x7f]+", lexicon_for(segment).glossed(segment)) if p.strip()]
            words = [w.lower() for p in pieces for w in re.findall(r"[A-Za-z]+", p)]
            between = [w.lower() for p in pieces[1:] for w in re.findall(r"[A-Za-z]+", p)]
        if not words:
            return False
        verbs = self.lex.action_verbs | self.lex.mutating_verbs
        return len(between) <= 3 and all(w in self.lex.stopwords or w in verbs for w in between)

    def _followed_by(self, c: Candidate, words: list[str]) -> bool:
        """The argument's whole name is written right after the value ("50 per page"), nothing but spaces or
        a hyphen between ("env:staging, 50 per page": the name is the number's)."""
        rest = self.values.text[c.end : c.end + 16 * len(words)].lower()
        if not re.match(r"[\s-]*[a-z]", rest):
            return False
        after = re.findall(r"[A-Za-z]+", rest)
        return [self.lex.stem(x) for x in after[: len(words)]] == [self.lex.stem(x) for x in words]

    def _names_entity(self, c: Candidate, cue: list[str]) -> bool:
        """A noun phrase "the <thing> <value>" where the thing is what the tool acts on: the value is that
        thing's name ("create the domain send.shop.io" → `domains_create(name)`, "a segment 'VIP'"), not
        a bare word of the request, and not the verb use of the word ("Email ana@x.io")."""
        word = cue[-1]
        if c.kind == "ngram" or len(word) < 3 or self.lex.stem(word) not in self.entity:
            return False
        return any(w in self.lex.determiners for w in cue[-3:-1])

    def _near_cue(self, c: Candidate) -> list[str]:
        """The words right before a value, back to the value written before it (at most 6: three words
        and the connectors and verbs between them)."""
        if c.start < 0:
            return c.cue.split()[-6:]
        before = [  # (a capitalised word may be the cue itself: "the HTML '<h1>Hi</h1>'")
            v.end
            for v in self.values.candidates
            if v.written and v.kind not in ("ngram", "phrase") and 0 <= v.end <= c.start
        ]
        since = max(before, default=0)
        segment = self.values.text[max(since, c.start - 48) : c.start]
        words = re.findall(r"[A-Za-z]+", lexicon_for(segment).glossed(segment))  # "主题“…”" → subject
        return [word.lower() for word in words[-6:]]

    def cued(self, c: Candidate, arg: str, *, optional: bool = False, roles: bool = True) -> bool:
        """The value is tied to this argument at least as strongly as to any other of the tool's arguments
        (and, for an optional argument, at least `evidence.optional_min`). Without `roles`, by its own name
        only (free text: "to Room 4B" says nothing about `timeMax`)."""
        score = self.tie(c, arg, roles=roles)
        floor = weights().evidence["optional_min"] if optional else 0.0
        if not (score > 0 and score >= floor and score >= self.strongest(c)):
            return False
        # tied as strongly to a field less deeply nested (`reference` and `applicationInfo.device.reference`):
        # the value is the shallower one's
        depth = field_depth(arg)
        ties = self._ties(c)
        return not any(
            field_depth(o) < depth and ties[o] >= score and self._can_take(c, o) for o in self.args if o != arg
        )

    def strongest(self, c: Candidate) -> float:
        """The strongest tie of a value to any argument of the tool (0: tied to none)."""
        key = id(c)
        if key not in self._best:
            ties = self._ties(c)
            self._best[key] = max((ties[a] for a in self.args if self._can_take(c, a)), default=0.0)
        return self._best[key]

    def _ties(self, c: Candidate) -> dict[str, float]:
        """The value's tie to every argument of the tool, computed once per value and tool."""
        key = id(c)
        if key not in self._all:
            self._all[key] = {a: self.tie(c, a) for a in self.args}
        return self._all[key]

    def _can_take(self, c: Candidate, arg: str) -> bool:
        """Text ("'Design review (final)'") cannot fill a date, a number, an identifier or a flag, nor quoted
        text an enum (its options are named by the request's words: planner/request_words.py)."""
        if c.kind not in ("quoted", "phrase", "ngram"):
            return True
        kind = self.kinds.get(arg)
        if kind is not None and (kind.is_identifier or kind.kind in ("email", "url", "phone")):
            return shaped_as(c, kind)  # (quoted words are a name, never an id)
        if kind is not None and kind.kind == "boolean":
            return False  # a flag is set by its own words, never by a value
        if kind is not None and kind.kind == "enum" and c.kind == "quoted":
            return False  # a quoted title is a value of its own ("课程“高一化学”" is no `courseState`)
        if arg in self.dated:
            return c.kind in TIMED_KINDS or c.is_number
        if arg in self.numeric:
            return c.is_number
        return True


def same_root(stem: str, stems: set[str], w: Mapping[str, float]) -> bool:
    """A word that is another form of a word of the argument's name by its long shared beginning, where the
    stemmer leaves them apart ("described" / `description`: "describ", "descript"); `w`: the evidence
    weights (`root_letters` shared at least, and at least `root_share` of the shorter stem)."""
    for other in stems:
        shared = len(os.path.commonprefix([stem, other]))
        if shared >= w["root_letters"] and shared >= w["root_share"] * min(len(stem), len(other)):
            return True
    return False

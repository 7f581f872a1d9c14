"""The words the domain-free planner reads requests with, and its hand-set ranking weights — both data.

Word lists live per language in `configs/lexicon/<language>.yaml` (English `en`, Chinese `zh`); the
weights, shared by every language, in `configs/lexicon/weights.yaml`. Nothing here is read at import
time: `lexicon(language)` and `weights()` load a file on first use and keep it (they are immutable).
A request is read with the lexicon of the script it is written in (`language_of`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import snowballstemmer
import yaml

LEXICON_DIR = Path(__file__).resolve().parent.parent / "configs" / "lexicon"
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _words(value: Any) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, (list, tuple)):
        return frozenset(str(v) for v in value)
    return frozenset(str(value).split())


def _alternatives(value: Any) -> str:
    """A YAML block of `a|b|c` alternatives (folded across lines) as one regex alternation."""
    text = "".join(str(value or "").split())
    return text.strip("|")


def _phrases(value: Any) -> tuple[tuple[str, ...], ...]:
    """`a b|c` (folded across lines) → (("a", "b"), ("c",)): phrases as lower-case words in a row."""
    return tuple(tuple(p.lower().split()) for p in str(value or "").split("|") if p.strip())


def _numbered(value: Any) -> Mapping[str, int]:
    """`{1: "jan january"}` → {"jan": 1, "january": 1}."""
    out: dict[str, int] = {}
    for number, names in (value or {}).items():
        for name in _words(names):
            out[name.lower()] = int(number)
    return MappingProxyType(out)


@dataclass(frozen=True)
class Lexicon:
    """One language's words (see configs/lexicon/en.yaml for what each list is for)."""

    language: str
    stopwords: frozenset[str] = frozenset()
    action_verbs: frozenset[str] = frozenset()
    polite_prefix: re.Pattern[str] = re.compile(r"(?!)")
    connectives: re.Pattern[str] = re.compile(r"(?!)")
    determiners: frozenset[str] = frozenset()
    sentence_end: str = ".!?;"
    months: Mapping[str, int] = field(default_factory=dict)
    weekdays: Mapping[str, int] = field(default_factory=dict)
    relative_days: Mapping[str, int] = field(default_factory=dict)
    next_words: frozenset[str] = frozenset()
    this_words: frozenset[str] = frozenset()
    in_words: frozenset[str] = frozenset()
    day_units: frozenset[str] = frozenset()
    week_units: frozenset[str] = frozenset()
    number_words: Mapping[str, int] = field(default_factory=dict)
    lead_skip: frozenset[str] = frozenset()
    name_connectors: frozenset[str] = frozenset()
    epoch_words: frozenset[str] = frozenset()
    zone_words: frozenset[str] = frozenset()
    anaphora: re.Pattern[str] = re.compile(r"(?!)")
    date_words: frozenset[str] = frozenset()
    time_words: frozenset[str] = frozenset()
    datetime_tails: frozenset[str] = frozenset()
    identifier_words: frozenset[str] = frozenset()
    lookup_verbs: frozenset[str] = frozenset()
    code_words: frozenset[str] = frozenset()
    mutating_verbs: frozenset[str] = frozenset()
    creating_verbs: frozenset[str] = frozenset()
    verb_synonyms: Mapping[str, frozenset[str]] = field(default_factory=dict)
    noun_synonyms: Mapping[str, frozenset[str]] = field(default_factory=dict)
    keyword_cues: frozenset[str] = frozenset()
    content_args: frozenset[str] = frozenset()
    content_verbs: frozenset[str] = frozenset()
    keyword_not_before: frozenset[str] = frozenset()
    query_words: tuple[str, ...] = ()
    filter_words: Mapping[str, frozenset[str]] = field(default_factory=dict)
    currency_words: Mapping[str, frozenset[str]] = field(default_factory=dict)
    currency_fields: frozenset[str] = frozenset()
    minor_unit_phrases: tuple[str, ...] = ()
    zero_decimal: frozenset[str] = frozenset()
    count_words: frozenset[str] = frozenset()
    limit_args: frozenset[str] = frozenset()
    unit_words: frozenset[str] = frozenset()
    limit_cues: frozenset[str] = frozenset()
    count_openers: frozenset[str] = frozenset()
    limit_tails: tuple[str, ...] = ()
    count_classifiers: frozenset[str] = frozenset()  # unsegmented languages: a number's counting word (个, 张)
    subject_forms: Mapping[str, str] = field(default_factory=dict)  # "me" → "i": a keyword said as a subject
    flag_antonyms: Mapping[str, str] = field(default_factory=dict)
    kind_words: Mapping[str, frozenset[str]] = field(default_factory=dict)
    kind_tails: frozenset[str] = frozenset()
    coordinate_words: Mapping[str, frozenset[str]] = field(default_factory=dict)
    order_phrases: Mapping[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    language_fields: frozenset[str] = frozenset()
    range_words: frozenset[str] = frozenset()
    language_names: Mapping[str, frozenset[str]] = field(default_factory=dict)
    media_fields: frozenset[str] = frozenset()
    markup_fields: frozenset[str] = frozenset()
    plain_fields: frozenset[str] = frozenset()
    media_types: Mapping[str, frozenset[str]] = field(default_factory=dict)
    country_aliases: Mapping[str, str] = field(default_factory=dict)  # "uk" → GB (planner/countries.py)
    role_words: Mapping[str, frozenset[str]] = field(default_factory=dict)
    negations: frozenset[str] = frozenset()
    denominators: frozenset[str] = frozenset()
    naming_words: frozenset[str] = frozenset()
    place_verbs: frozenset[str] = frozenset()  # "search Spotify for …": the verb before a place searched
    place_tails: frozenset[str] = frozenset()  # ... and the word after it
    name_args: frozenset[str] = frozenset()
    body_args: frozenset[str] = frozenset()
    flag_words: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    final: str = ""
    stemmer: str = ""  # a Snowball algorithm ("english"); when set it stems instead of `suffixes`/`final`
    iso_words: frozenset[str] = frozenset()
    date_patterns: tuple[re.Pattern[str], ...] = ()  # named groups year?, month, day (languages without month names)
    time_patterns: tuple[re.Pattern[str], ...] = ()  # named groups hour, minute?, half?, period?
    afternoon_words: frozenset[str] = frozenset()  # a `period` that adds 12 hours
    gloss: Mapping[str, str] = field(default_factory=dict)  # word → English, for the English embedding model
    gloss_pattern: re.Pattern[str] | None = None  # the glossed words, longest first (compiled once per language)
    segmented: bool = True  # words are separated by spaces (False: Chinese)

    def stem(self, word: str) -> str:
        """A crude stem: a plural `s` removed first (so that a plural stems as its singular: "methods" and
        "method" → "metho"), then the longest listed suffix when at least 3 letters stay (never the `s` of
        "address" or "status"), then one `final` letter ("issued" → "issu", "issue" → "issu"). With a
        `stemmer`, the Snowball stemmer of that language instead, which also meets derived forms ("announce"
        and "announcements", "invite" and "invitations", "assign" and "assignment")."""
        word = word.lower()
        if self.stemmer:
            return _snowball_stem(self.stemmer, word)
        if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 4:
            word = word[:-1]
        for suffix in self.suffixes:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        if self.final and word[-1:] in self.final and len(word) > 3:
            word = word[:-1]
        return word

    def glossed(self, text: str) -> str:
        """`text` with every glossed word followed by its English gloss (unchanged when there is no gloss)."""
        if not self.gloss:
            return text
        return self._glossary().sub(lambda m: f"{m.group(0)} {self.gloss[m.group(0)]} ", text)

    def glossed_word(self, text: str) -> str:
        """The English gloss of the glossed word `text` opens with ("" when it opens with none)."""
        if not self.gloss:
            return ""
        m = self._glossary().match(text)
        return self.gloss[m.group(0)] if m else ""

    def _glossary(self) -> re.Pattern[str]:
        """The glossed words as one pattern (compiled once per language when loaded)."""
        return self.gloss_pattern or _gloss_pattern(self.gloss)


def _gloss_pattern(gloss: Mapping[str, str]) -> re.Pattern[str]:
    """One alternation of the glossed words, longest first (so "文件夹" wins over "文件")."""
    return re.compile("|".join(re.escape(w) for w in sorted(gloss, key=len, reverse=True)))


def _load(path: Path, language: str) -> Lexicon:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    anaphora = _words(data.get("anaphora"))
    segmented = bool(data.get("segmented", True))
    gloss = {str(k): str(v) for k, v in (data.get("gloss") or {}).items()}
    edge = r"\b" if segmented else ""  # no word boundaries between CJK characters
    return Lexicon(
        language=language,
        stopwords=_words(data.get("stopwords")),
        action_verbs=_words(data.get("action_verbs")),
        polite_prefix=re.compile(rf"^(?:(?:{_alternatives(data.get('polite_prefix'))}){edge}\s*[,，]?\s*)+", re.I)
        if data.get("polite_prefix")
        else re.compile(r"(?!)"),
        connectives=re.compile(rf"[,，]?\s*{edge}(?:{_alternatives(data.get('connectives'))}){edge}\s*[,，]?", re.I)
        if data.get("connectives")
        else re.compile(r"(?!)"),
        determiners=_words(data.get("determiners")),
        sentence_end=str(data.get("sentence_end", ".!?;")),
        months=_numbered(data.get("months")),
        weekdays=_numbered(data.get("weekdays")),
        relative_days=MappingProxyType({str(k): int(v) for k, v in (data.get("relative_days") or {}).items()}),
        next_words=_words(data.get("next_words")),
        this_words=_words(data.get("this_words")),
        in_words=_words(data.get("in_words")),
        day_units=_words(data.get("day_units")),
        week_units=_words(data.get("week_units")),
        number_words=MappingProxyType({str(k): int(v) for k, v in (data.get("number_words") or {}).items()}),
        lead_skip=_words(data.get("lead_skip")),
        name_connectors=_words(data.get("name_connectors")),
        epoch_words=_words(data.get("epoch_words")),
        zone_words=_words(data.get("zone_words")),
        anaphora=re.compile(edge + "(" + "|".join(sorted(anaphora)) + ")" + edge, re.I)
        if anaphora
        else re.compile(r"(?!)"),
        date_words=_words(data.get("date_words")),
        time_words=_words(data.get("time_words")),
        datetime_tails=_words(data.get("datetime_tails")),
        identifier_words=_words(data.get("identifier_words")),
        lookup_verbs=_words(data.get("lookup_verbs")),
        code_words=_words(data.get("code_words")),
        mutating_verbs=_words(data.get("mutating_verbs")),
        creating_verbs=_words(data.get("creating_verbs")),
        verb_synonyms=MappingProxyType({k: _words(v) for k, v in (data.get("verb_synonyms") or {}).items()}),
        noun_synonyms=MappingProxyType({k: _words(v) for k, v in (data.get("noun_synonyms") or {}).items()}),
        keyword_cues=_words(data.get("keyword_cues")),
        content_args=_words(data.get("content_args")),
        content_verbs=_words(data.get("content_verbs")),
        keyword_not_before=_words(data.get("keyword_not_before")),
        query_words=tuple(str(data.get("query_words") or "").split()),
        filter_words=MappingProxyType({k: _words(v) for k, v in (data.get("filter_words") or {}).items()}),
        currency_words=MappingProxyType({k: _words(v) for k, v in (data.get("currency_words") or {}).items()}),
        currency_fields=_words(data.get("currency_fields")),
        minor_unit_phrases=tuple(str(p) for p in data.get("minor_unit_phrases") or ()),
        zero_decimal=_words(data.get("zero_decimal")),
        count_words=_words(data.get("count_words")),
        limit_args=_words(data.get("limit_args")),
        unit_words=_words(data.get("unit_words")),
        limit_cues=_words(data.get("limit_cues")),
        count_openers=_words(data.get("count_openers")),
        limit_tails=tuple(str(p) for p in data.get("limit_tails") or ()),
        count_classifiers=_words(data.get("count_classifiers")),
        subject_forms=MappingProxyType(
            {str(k).lower(): str(v).lower() for k, v in (data.get("subject_forms") or {}).items()}
        ),
        flag_antonyms=MappingProxyType(_antonyms(data.get("flag_antonyms"))),
        kind_words=MappingProxyType({k: _words(v) for k, v in (data.get("kind_words") or {}).items()}),
        kind_tails=_words(data.get("kind_tails")),
        coordinate_words=MappingProxyType({k: _words(v) for k, v in (data.get("coordinate_words") or {}).items()}),
        order_phrases=MappingProxyType({k: _phrases(v) for k, v in (data.get("order_phrases") or {}).items()}),
        language_fields=_words(data.get("language_fields")),
        range_words=_words(data.get("range_words")),
        language_names=MappingProxyType({k: _words(v) for k, v in (data.get("language_names") or {}).items()}),
        media_fields=_words(data.get("media_fields")),
        markup_fields=_words(data.get("markup_fields")),
        plain_fields=_words(data.get("plain_fields")),
        media_types=MappingProxyType({k: _words(v) for k, v in (data.get("media_types") or {}).items()}),
        country_aliases=MappingProxyType(
            {str(k).lower(): str(v).upper() for k, v in (data.get("country_aliases") or {}).items()}
        ),
        role_words=MappingProxyType({k: _words(v) for k, v in (data.get("role_words") or {}).items()}),
        negations=_words(data.get("negations")),
        denominators=_words(data.get("denominators")),
        naming_words=_words(data.get("naming_words")),
        place_verbs=_words(data.get("place_verbs")),
        place_tails=_words(data.get("place_tails")),
        name_args=_words(data.get("name_args")),
        body_args=_words(data.get("body_args")),
        flag_words=_words(data.get("flag_words")),
        suffixes=tuple(sorted(_words(data.get("suffixes")), key=len, reverse=True)),
        final=str(data.get("final") or "").replace(" ", ""),
        stemmer=_stemmer_name(data.get("stemmer")),
        iso_words=_words(data.get("iso_words")),
        date_patterns=tuple(re.compile(p) for p in data.get("date_patterns") or ()),
        time_patterns=tuple(re.compile(p) for p in data.get("time_patterns") or ()),
        afternoon_words=_words(data.get("afternoon_words")),
        gloss=MappingProxyType(gloss),
        gloss_pattern=_gloss_pattern(gloss) if gloss else None,
        segmented=segmented,
    )


_stemmers = threading.local()  # a Snowball stemmer object keeps state while it stems: one per thread


def _stemmer_name(value: Any) -> str:
    name = str(value or "")
    if name and name not in snowballstemmer.algorithms():
        raise ValueError(f"unknown Snowball stemmer {name!r}")
    return name


@lru_cache(maxsize=65536)
def _snowball_stem(algorithm: str, word: str) -> str:
    own = getattr(_stemmers, algorithm, None)
    if own is None:
        own = snowballstemmer.stemmer(algorithm)
        setattr(_stemmers, algorithm, own)
    return str(own.stemWord(word))


def _antonyms(pairs: Any) -> dict[str, str]:
    """ "public private" pairs → each word's opposite, both ways."""
    out: dict[str, str] = {}
    for pair in pairs or ():
        a, b = str(pair).split()
        out[a], out[b] = b, a
    return out


@lru_cache(maxsize=8)
def lexicon(language: str = "en") -> Lexicon:
    """The lexicon of `language` (configs/lexicon/<language>.yaml); FileNotFoundError when there is none."""
    if not language.isalpha():
        raise ValueError(f"invalid language {language!r}")
    path = LEXICON_DIR / f"{language}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no lexicon for language {language!r} ({path})")
    return _load(path, language)


def language_of(text: str) -> str:
    """`zh` when at least a fifth of the letters are CJK characters, else `en`."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return "en"
    cjk = sum(1 for ch in letters if _CJK.match(ch))
    return "zh" if cjk * 5 >= len(letters) else "en"


def lexicon_for(text: str) -> Lexicon:
    return lexicon(language_of(text))


@dataclass(frozen=True)
class Weights:
    """Hand-set ranking weights by group (configs/lexicon/weights.yaml)."""

    rank: Mapping[str, float]
    draft: Mapping[str, float]
    draft_kind: Mapping[str, float]
    reference: Mapping[str, float]
    hints: Mapping[str, float]
    evidence: Mapping[str, float]
    selection: Mapping[str, float]


@lru_cache(maxsize=1)
def weights() -> Weights:
    data: dict[str, Any] = yaml.safe_load((LEXICON_DIR / "weights.yaml").read_text(encoding="utf-8")) or {}

    def group(name: str) -> Mapping[str, float]:
        return MappingProxyType({k: float(v) for k, v in (data.get(name) or {}).items() if not isinstance(v, dict)})

    kinds = (data.get("draft") or {}).get("kind") or {}
    return Weights(
        rank=group("rank"),
        draft=group("draft"),
        draft_kind=MappingProxyType({k: float(v) for k, v in kinds.items()}),
        reference=group("reference"),
        hints=group("hints"),
        evidence=group("evidence"),
        selection=group("selection"),
    )

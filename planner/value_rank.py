"""Which request value fits an argument by name: an argument's name words, the compounds and role words
that name it, and `rank`, the candidates for one argument best first.

planner/ties.py weighs the same words for every argument of a tool at once; this ranks for one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from planner.lexicon import Lexicon, lexicon_for, weights
from planner.value_candidates import Candidate


def name_tokens(name: str) -> set[str]:
    """`tax_rate` / `taxRate` / `Tax-Rate` → {"tax", "rate"} (and a crude singular of each)."""
    parts = re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", name)
    tokens = {p.lower() for p in parts if p}
    return tokens | {t[:-1] for t in tokens if t.endswith("s") and len(t) > 3}


def ends_in_name(word: str, tokens: set[str]) -> bool:
    """A compound that ends in one of an argument's words (of 4 letters or more) names that argument:
    "bookshelf" names `shelf`."""
    return any(len(t) >= 4 and len(word) > len(t) and word.endswith(t) for t in tokens)


def role_match(cue: str, arg_tokens: set[str], lex: Lexicon) -> bool:
    """The last word before a value is a role word that fits the argument ("from" → origin)."""
    words = cue.split()
    return bool(words) and bool(lex.role_words.get(words[-1], frozenset()) & arg_tokens)


def rank(
    candidates: Sequence[Candidate],
    arg_name: str,
    description: str = "",
    *,
    span: tuple[int, int] | None = None,
    limit: int = 10,
    lex: Lexicon | None = None,
) -> list[Candidate]:
    """Candidates for one argument, best first: cue words naming the argument (or a role word that fits
    it), its name right after the value, inside the step's span, earlier in the request. Derived
    readings keep their source's position. Weights: configs/lexicon/weights.yaml `rank`."""
    lex = lex or lexicon_for("")
    w = weights().rank
    described = {word for word in re.findall(r"[a-z]+", description.lower()) if word not in lex.stopwords}
    wanted = name_tokens(arg_name) | described
    own = name_tokens(arg_name)
    stems = {lex.stem(t) for t in own if len(t) > 2}

    def score(item: tuple[int, Candidate]) -> tuple[float, int]:
        index, c = item
        cue = set(c.cue.split())
        s = w["own_cue"] * len(own & cue) + w["description_cue"] * len((wanted - own) & cue)
        if not own & cue and stems & {lex.stem(word) for word in cue if len(word) > 2}:
            s += w["own_cue"]
        if role_match(c.cue, own, lex):
            s += w["role_cue"]
        if c.tail and (c.tail in own or lex.stem(c.tail) in stems):
            s += w["tail"]
        if span is not None and c.start >= 0:
            s += w["in_step"] if span[0] <= c.start < span[1] else 0.0
        s += w["ngram"] if c.kind == "ngram" else 0.0
        return (-s, index)

    ordered = sorted(enumerate(candidates), key=score)
    return [c for _, c in ordered[:limit]]

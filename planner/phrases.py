"""Phrases and n-grams of the request: capitalised runs that name something ("Bank of America", "Q2
Hiring"), trimmed of the words around a name, split where a sentence ends, and short content-word
n-grams.

A capital that only opens a sentence, or names the place a search is made in ("Search Spotify for
…"), is no value; planner/values.py uses these to decide which runs it offers as a `phrase` and which
word spans as an `ngram`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from planner.lexicon import Lexicon
from planner.value_candidates import Candidate
from planner.value_patterns import WORD


def searched_place(request: str, start: int, end: int, lex: Lexicon) -> bool:
    """The name is the place a search is made in: a place verb before it (a stopword between: "search on")
    and a place tail right after it ("Search Google Books for quantum computing")."""
    before = WORD.findall(request[max(0, start - 40) : start].lower())[-2:]
    after = WORD.findall(request[end : end + 12].lower())[:1]
    if not before or not after or after[0] not in lex.place_tails:
        return False
    return before[-1] in lex.place_verbs or (
        len(before) == 2 and before[0] in lex.place_verbs and before[1] in lex.stopwords
    )


def opens_with_code(phrase: str, start: int, found: list[Candidate], free: Callable[[int, int], bool]) -> bool:
    """A capitalised run whose first word is a code the request wrote ("Q2 Hiring project") and whose other
    words are free: the whole run is a name too."""
    first = phrase.split()[0]
    opened = any(c.kind == "code" and c.start == start and c.value == first for c in found)
    return opened and free(start + len(first), start + len(phrase))


def capitalised(lex: Lexicon) -> re.Pattern[str]:
    """Capitalised phrases, the lexicon's small connecting words allowed inside ("Bank of America")."""
    small = "|".join(re.escape(w) for w in sorted(lex.name_connectors)) or "(?!)"
    return re.compile(rf"\b[A-Z][\w'&.-]*(?:\s+(?:{small})\s+[A-Z][\w'&.-]*|\s+[A-Z][\w'&.-]*)*")


def sentence_parts(m: re.Match[str]) -> list[re.Match[str]]:
    """A capitalised run split where a sentence ends inside it ("UK. Block"), as matches of the request."""
    pattern = re.compile(r"(?:[^.!?;\s]|[.!?;](?!\s))+(?:\s+(?:[^.!?;\s]|[.!?;](?!\s))+)*[.!?;]?")
    return list(pattern.finditer(m.string, m.start(), m.end()))


def opens_sentence(request: str, start: int, lex: Lexicon) -> bool:
    """The word at `start` is the first of the request or of one of its sentences."""
    before = request[:start].rstrip(" \t\"'“‘(")
    return not before or before[-1] in lex.sentence_end or before[-1] == "\n"


def trim_phrase(phrase: str, lex: Lexicon, *, opening: bool = False) -> str:
    """The phrase without the capitalised words that do not start or end a name; one that opens a sentence
    also without the small words and the verb its capital only looked like a name for ("In the Onboarding
    Revamp project" → "Onboarding Revamp", "Move Dune by …" → "Dune")."""
    skip = lex.lead_skip | {m.capitalize() for m in lex.months}
    verbs = lex.action_verbs | lex.lookup_verbs | lex.mutating_verbs
    words = [w.strip(".,;:!?") for w in phrase.split()]
    while words and (words[0] in skip or (opening and len(words) > 1 and (words[0].lower() in lex.stopwords | verbs))):
        words = words[1:]
    while words and (words[-1] in skip or words[-1].lower() in lex.stopwords):
        words = words[:-1]
    return " ".join(words)


def ngrams(request: str, lex: Lexicon, longest: int = 3) -> Iterable[tuple[int, int, str]]:
    """Content-word n-grams (1..3 words, no stopword or negation at either end: "without" is no value) with
    their character spans."""
    tokens = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"[A-Za-z][A-Za-z'-]*", request)]
    for size in range(longest, 0, -1):
        for i in range(len(tokens) - size + 1):
            window = tokens[i : i + size]
            if any(b[0] - a[1] > 1 for a, b in zip(window, window[1:], strict=False)):
                continue  # not adjacent (punctuation between)
            first, last = window[0][2].lower(), window[-1][2].lower()
            ends = {first, last}
            if ends & (lex.stopwords | lex.negations) or first in lex.action_verbs or len(window[-1][2]) < 2:
                continue
            yield window[0][0], window[-1][1], request[window[0][0] : window[-1][1]]

"""A list's size from the request: the count of the things a listing tool returns.

"Show me the ten most recently modified files" → `pageSize: 10`, "list up to 50 of my files", "列出我的文件，
最多 20 个": a whole number nothing ties to an argument, that counts what the tool lists. planner/evidence.py
offers it to the size argument (`limit`, `pageSize`, `per_page`: the lexicon's `limit_args`) of a tool that
lists or finds things.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from planner.lexicon import lexicon, lexicon_for
from planner.ties import Ties
from planner.values import Candidate

MAX_SIZE = 1000  # a larger number is a measure or an id, not how many things to list


def list_size(inside: Sequence[Candidate], text: str, ties: Ties, listed: set[str]) -> list[Any]:
    """The one whole number of the step (`inside`, written in `text`) that nothing ties to an argument and
    that counts the things listed: the plural of what the tool lists (`listed`: stems of the nouns of its
    name and of its output's list fields) follows it within four words, no unit first ("the ten most
    recently modified files"; not "within 20 km", "a single send", "only two levels deep"), or a limit word
    comes right before it ("up to 50", "the last 10", "最多 20 个") or after it ("10 at most"), a Chinese
    classifier follows it ("20 张就行"), or a verb asking for things opens it ("Show me 5 cinemas near …");
    never one a unit follows ("the last four weeks"). Empty when there is none or several."""
    lex, local = lexicon("en"), lexicon_for(text)
    counts = []
    for c in inside:
        if not (c.is_number and c.written and float(c.value).is_integer() and 0 < float(c.value) <= MAX_SIZE):
            continue
        if ties.strongest(c) > 0:
            continue
        before = text[max(0, c.start - 12) : c.start].lower()
        after = re.findall(r"[a-z]+", text[c.end : c.end + 40].lower())
        if after and after[0] in lex.unit_words:
            continue  # a measure ("the last four weeks", "within 20 km"), whatever comes before it
        cued = any(cue in before for cue in local.limit_cues if not local.segmented) or bool(
            set(re.findall(r"[a-z]+", before)[-2:]) & local.limit_cues
        )
        if not cued and local.limit_tails:
            cued = " ".join(after[:2]).startswith(local.limit_tails)  # "10 at most", "20 max"
        if not cued and local.count_classifiers:
            cued = text[c.end : c.end + 2].strip()[:1] in local.count_classifiers  # "专辑，20 张就行"
        opened = _opens_count(before, local.count_openers)
        counted = False
        for word in after[:4]:
            if word in lex.unit_words:
                break
            if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
                counted = lex.stem(word) in listed or (opened and word is after[0])
                break
        if cued or counted:
            counts.append(c.value)
    return counts if len(set(counts)) == 1 else []


def _opens_count(before: str, openers: frozenset[str]) -> bool:
    """The words before the number are a verb asking for things, with at most "me" or "us" between
    ("Show me 5 cinemas", "find 3 hotels"): the plural right after the number is what is asked for."""
    words = re.findall(r"[a-z]+", before)
    while words and words[-1] in ("me", "us"):
        words.pop()
    return bool(words) and words[-1] in openers

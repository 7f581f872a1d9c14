"""A request split into the steps it asks for (generic English, no domain).

"Calculate a 20% tip on $100, create an invoice for John Doe, then encrypt the invoice id" → three
steps. Sentences are split first, then at sequencing connectives ("then", "after that", "finally"),
then before a comma or "and" that is followed by an action verb. A piece that does not start with an
action verb ("I will pick it up at 7:00 AM") is context for the step before it, not a step of its own;
one that starts with a determiner ("..., a table near the window and the weather there") is an *implicit*
step, which planner/selection.py keeps only when a tool of its own fits it.
The verbs are the lexicon's `action_verbs` (configs/lexicon/<language>.yaml) plus the first word of every
tool name in the catalog ("reserve_car" adds "reserve"), so a user's own vocabulary counts. A language
written without spaces (Chinese) is split at sentences and connectives only.

Each step keeps its character span in the request: the planner shows the model which words a node
came from, and ranks argument values inside that span first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from planner.lexicon import Lexicon, lexicon_for
from planner.values import QUOTED

MAX_STEPS = 12


@dataclass(frozen=True)
class Step:
    text: str
    start: int
    end: int
    implicit: bool = False  # a verbless "and the weather there": a step only if a tool of its own fits it


def tool_verb(name: str) -> str:
    """The leading word of a tool name: `Buses.BuyBusTicket` → "buy", `get_weather` → "get"."""
    last = name.rsplit(".", 1)[-1]
    parts = [p for p in re.split(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", last) if p]
    return parts[0].lower() if parts else ""


def _splitters(lex: Lexicon, verbs: set[str]) -> list[re.Pattern[str]]:
    ends = re.escape(lex.sentence_end)
    if not lex.segmented:  # no spaces between words: sentences and connectives only
        return [re.compile(rf"(?<=[{ends}])\s*"), lex.connectives]
    sentence = re.compile(rf"(?<=[{ends}])\s+(?=[A-Z\"'])")
    verb_alt = "|".join(sorted(verbs, key=len, reverse=True))
    before_verb = re.compile(rf"(?:,\s*(?:and\s+)?|\s+and\s+(?:also\s+)?)(?=(?:please\s+)?(?:{verb_alt})\b)", re.I)
    determiners = "|".join(sorted(lex.determiners)) or "(?!)"
    noun_phrase = re.compile(rf"(?:,\s*(?:and\s+)?|\s+and\s+(?:also\s+)?)(?=(?:{determiners})\s)", re.I)
    unknown_verb = re.compile(rf"(?:,\s*(?:and\s+)?|\s+and\s+(?:also\s+)?)(?={_verb_before_object(lex).pattern})")
    return [sentence, lex.connectives, before_verb, noun_phrase, unknown_verb]


def _verb_before_object(lex: Lexicon) -> re.Pattern[str]:
    """A lowercase word followed by what opens an object: a determiner, a pronoun or a quote ("…, and
    announce 'First meeting'", "and leave a comment on them"). Read as a verb no list holds."""
    determiners = "|".join(sorted(lex.determiners)) or "(?!)"
    return re.compile(rf"[a-z]+\s+(?:(?:{determiners})\s|{lex.anaphora.pattern}|[\"'‘“])")


def split_steps(request: str, extra_verbs: Iterable[str] = (), parameter_words: Iterable[str] = ()) -> list[Step]:
    """`extra_verbs`: the catalog's own verbs; `parameter_words`: words of its parameter names, which before
    a quote name the value, not an action ("…, and priority 'high'" is more of the step before)."""
    lex = lexicon_for(request)
    verbs = set(lex.action_verbs) | {v for v in extra_verbs if v.isalpha() and len(v) > 1}
    named = {w.lower() for w in parameter_words} - verbs
    steps: list[Step] = []
    quoted = [(m.start(), m.end()) for m in QUOTED.finditer(request)]  # a step never ends inside quotes
    verb_before_object = _verb_before_object(lex)
    sequenced = _after_connectives(request, lex, quoted)
    opened: set[int] = set()  # starts of the steps a sequencing connective opened
    for start, piece in _pieces(request, _splitters(lex, verbs), quoted):
        text = piece.strip(" ,.;:!?，。；：！？")
        lead = lex.polite_prefix.match(text)
        offset = piece.find(text) + (lead.end() if lead else 0)
        text = text[lead.end() :].strip(" ,.;:!?，。；：！？") if lead else text
        if not text:
            continue
        word = _opening_word(text)
        if steps and lex.segmented and word in lex.determiners:
            steps.append(Step(text, start + offset, start + offset + len(text), implicit=True))
            continue
        if steps and not lex.segmented and not any(verb in text for verb in lex.action_verbs):
            last = steps[-1]  # a piece without a verb of its own ("主题“…”") is more of the step before
            steps[-1] = Step(request[last.start : start + offset + len(text)], last.start, start + offset + len(text))
            continue
        lowercase = text[:1].islower()  # an imperative verb, not a name ("…, then Monday")
        if steps and lex.segmented and start in sequenced and lowercase and word and word not in lex.stopwords:
            opened.add(start + offset)  # "…, then comment on it: '…'": a connective opens a step, whatever verb
            steps.append(Step(text, start + offset, start + offset + len(text)))
            continue
        names_value = word in named and re.match(r"[A-Za-z]+\s+[\"'‘“]", text) is not None
        unknown = word not in verbs | lex.stopwords and not names_value
        if steps and lex.segmented and unknown and verb_before_object.match(text):
            steps.append(Step(text, start + offset, start + offset + len(text), implicit=True))
            continue  # a step only if a tool of its own fits it (planner/selection.py)
        if steps and lex.segmented and word not in verbs:
            last = steps[-1]
            steps[-1] = Step(request[last.start : start + offset + len(text)], last.start, start + offset + len(text))
            continue
        steps.append(Step(text, start + offset, start + offset + len(text)))
    if not steps:
        return [Step(request.strip(), 0, len(request))]
    setting = _opening_word(steps[0].text) in lex.stopwords - verbs
    if len(steps) > 1 and lex.segmented and setting and steps[1].start not in opened:
        first, second = steps[0], steps[1]  # "In course d:phys-12, add a topic …": the setting of the next step
        steps[:2] = [Step(request[first.start : second.end], first.start, second.end)]
    return steps[:MAX_STEPS]


def _after_connectives(request: str, lex: Lexicon, quoted: Sequence[tuple[int, int]]) -> set[int]:
    """Where the text after each sequencing connective that ends a clause begins ("…, then", "… and then",
    outside quotes): a comma or "and" before it, so "due next Friday" or "as well as" inside a phrase is none."""
    found = set()
    for m in lex.connectives.finditer(request):
        said = m.group(0).strip().lower()
        if m.start() == 0 or any(a < m.start() < b for a, b in quoted):
            continue
        if said.startswith((",", "，")) or said.split()[0] == "and":
            found.add(m.end())
    return found


def follows_connective(request: str, step: Step) -> bool:
    """The step opens right after a sequencing connective that ends a clause ("…, then comment on it: '…'"):
    the request says it is an action of its own."""
    lex = lexicon_for(request)
    quoted = [(m.start(), m.end()) for m in QUOTED.finditer(request)]
    return any(at <= step.start and not request[at : step.start].strip(" ,.;:，。；：") for at in
               _after_connectives(request, lex, quoted))  # fmt: skip


def _opening_word(text: str) -> str:
    first = re.match(r"[A-Za-z]+", text)
    return first.group(0).lower() if first else ""


def _pieces(
    text: str, splitters: list[re.Pattern[str]], protected: Sequence[tuple[int, int]] = ()
) -> list[tuple[int, str]]:
    """`text` cut by each splitter in turn, never inside a `protected` span (quoted text: "leave a comment:
    'Ana, please review the Q2 milestones.'" is one step); every piece with its offset in `text`."""
    pieces = [(0, text)]
    for splitter in splitters:
        cut: list[tuple[int, str]] = []
        for offset, piece in pieces:
            position = 0
            for m in splitter.finditer(piece):
                if any(a < offset + m.start() < b or a < offset + m.end() < b for a, b in protected):
                    continue
                if m.start() > position:
                    cut.append((offset + position, piece[position : m.start()]))
                position = m.end()
            if position < len(piece):
                cut.append((offset + position, piece[position:]))
        pieces = cut
    return pieces

"""English function words the generic planner reads requests with (language knowledge, no domain).

- `STOPWORDS`: words that never start or end a value n-gram;
- `ACTION_VERBS`: imperative verbs that open a step ("find ...", "send ...", "convert ..."); the verbs
  that open the catalog's own tool names are added per request (planner/steps.py);
- `POLITE_PREFIX`: openers stripped before a step's verb ("please", "I want to", "can you").
"""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _words(
    """
    a an the and or but of to for in on at by with from into onto about as is are be been was were it
    its this that these those there here my me i we our us you your he she they them his her their
    please can could would will shall should may might must do does did have has had not no so then than
    also some any each every all both which what when where who whom how why want need like get
    """
)

ACTION_VERBS = _words(
    """
    get find search look book reserve buy purchase send create make add schedule calculate compute
    convert translate check show tell give generate analyze analyse play set update delete remove cancel
    order rent fetch list compare summarize summarise email call post share track encrypt decrypt
    shorten recommend suggest estimate measure detect identify predict plan arrange pay transfer
    retrieve download upload count validate verify record note remind save store open close start stop
    determine provide display read write draft sort filter rate review lookup locate register sign
    notify inform text message submit apply extract parse format resize crop scan lookup query fill
    assign invite join follow subscribe publish print transcribe rewrite correct classify tag label
    monitor alert ping geocode forecast quote split merge combine sum total average round multiply
    divide subtract
    """
)

POLITE_PREFIX = re.compile(
    r"^(?:(?:please|kindly|also|and|then|now|so|first|firstly|secondly|next|finally|lastly|"
    r"i\s+(?:would\s+like|want|need|wish)\s+(?:you\s+)?to|i'd\s+like\s+(?:you\s+)?to|can\s+you|could\s+you|"
    r"would\s+you|will\s+you|help\s+me(?:\s+to)?|let's|lets|let\s+me|me)\b\s*,?\s*)+",
    re.I,
)

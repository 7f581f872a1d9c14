"""Watching a streamed JSON answer for a string that repeats itself.

A small model decoding under a grammar can loop inside a free string ("2021-03-03T00:00:00.000000…",
"Launch Launch Launch …") until its token budget ends, and the budget of a node with many arguments is
hundreds of tokens: on a CPU that is tens of seconds spent on text the answer cannot use. `RepeatWatch`
follows the JSON lexically as it arrives (in a string or not, escapes) and reports a string whose last
`window` characters are one unit of at most `max_period` characters said over and over. The caller stops
the stream there and treats the answer as cut off (planner/decoding.py then bounds that argument).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RepeatWatch:
    """Feed it the answer's text piece by piece; `looping` turns true inside a string that repeats."""

    window: int = 48
    max_period: int = 12
    looping: bool = False
    _in_string: bool = False
    _escaped: bool = False
    _tail: list[str] = field(default_factory=list)

    def feed(self, text: str) -> bool:
        for char in text:
            if not self._in_string:
                if char == '"':
                    self._in_string, self._tail = True, []
                continue
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == '"':
                self._in_string = False
                continue
            self._tail.append(char)
            if len(self._tail) > 2 * self.window:
                del self._tail[: self.window]
            if not self.looping and len(self._tail) >= self.window:  # per character: chunking changes nothing
                self.looping = _repeats("".join(self._tail[-self.window :]), self.max_period)
        return self.looping


def _repeats(tail: str, max_period: int) -> bool:
    """`tail` is made of one unit of `max_period` characters or fewer, repeated."""
    return any(tail[period:] == tail[:-period] for period in range(1, max_period + 1))

"""Matching time of a catastrophic pattern: Python's backtracking `re` against RE2 (planner/safe_regex.py).

`^(a|a)*$` on `a…ab` doubles Python's work with every character; RE2's is linear in the text.

    python -m benchmarks.regex_worst_case
"""

from __future__ import annotations

import re
import time

from planner import safe_regex

PATTERN = "^(a|a)*$"


def timed(search: object, text: str) -> float:
    started = time.perf_counter()
    search(PATTERN, text)  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    print("| engine | value length | match time |")
    print("|---|---|---|")
    for length in (16, 20, 22, 24):
        text = "a" * (length - 1) + "b"
        print(f"| Python re | {length} | {timed(re.search, text) * 1000:.1f} ms |")
    safe_regex.compile_pattern(PATTERN)  # compiled once (cached), as the validator does
    for length in (24, 40, 10_000, 1_000_000):
        text = "a" * (length - 1) + "b"
        best = min(timed(safe_regex.search, text) for _ in range(5))
        print(f"| RE2 | {length:,} | {best * 1e6:.1f} µs |")


if __name__ == "__main__":
    main()

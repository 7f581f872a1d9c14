"""Which earlier outputs a node probably consumes: references ranked for the prompt and the fallback.

A node's step text often names what it takes from an earlier call ("convert *the tip amount*", "send
*the encrypted data*", "translate *it*"); an argument is often named like the output field it takes
(`distance` ← `$n1.distance`). Both are generic signals read from names and words, never from a domain.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from planner.grammar import Upstream
from planner.values import name_tokens

_ANAPHORA = re.compile(r"\b(it|its|them|they|this|that|these|those|result|results|output|above|previous|same)\b", re.I)
_WORD = re.compile(r"[a-z]+")


def _field_words(path: str) -> set[str]:
    return {t for part in path.split(".") for t in name_tokens(part) if len(t) > 2}


def reference_hints(step: str, arg_names: Sequence[str], upstream: Sequence[Upstream], *, limit: int = 8) -> list[str]:
    """References worth showing for a node, best first (the grammar offers all of them anyway)."""
    words = set(_WORD.findall(step.lower()))
    args = {t for name in arg_names for t in name_tokens(name)}
    scored: list[tuple[float, int, str]] = []
    order = 0
    for distance, up in enumerate(reversed(upstream)):
        tool_words = {t for t in name_tokens(up.tool.name) if len(t) > 2}
        mentioned = bool(tool_words & words) or bool(_ANAPHORA.search(step))
        whole = 1.0 + (1.5 if mentioned else 0.0) - 0.2 * distance
        scored.append((whole, order, f"${up.node_id}"))
        order += 1
        for path, _kind in up.tool.output_fields:
            fw = _field_words(path)
            score = 2.0 * len(fw & words) + 1.5 * len(fw & args) + (0.5 if mentioned else 0.0) - 0.2 * distance
            scored.append((score, order, f"${up.node_id}.{path}"))
            order += 1
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [ref for score, _, ref in scored[:limit] if score > 0]

"""Held-out evaluation on external data: template-disjoint splits and candidate tool sets.

NESTFUL-style sets are templated: many requests share one gold tool sequence. Leave-one-out inside a
file is therefore not held out (a sibling with the same sequence is always in the pool). Here

- requests are grouped so that every group holds all requests with the same gold tool *multiset*
  (stricter than the same sequence) and all near-duplicate requests (word-set Jaccard ≥ 0.7, joined
  transitively); whole groups go either to the `pool` (what the planner may see: demonstrations,
  thresholds) or to `scored`, never both;
- each scored request is planned over a small catalog: its own gold tools plus distractors drawn
  from the same spec file (seeded by the case id, so every run and every variant sees the same set).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

_WORD = re.compile(r"[a-z0-9]+")
NEAR_DUPLICATE_JACCARD = 0.7


class HasPlan(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def request(self) -> str: ...


@dataclass(frozen=True)
class Split:
    pool: list[Any]
    scored: list[Any]
    seed: int
    groups_pool: int
    groups_scored: int

    def describe(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "pool": len(self.pool),
            "scored": len(self.scored),
            "groups_pool": self.groups_pool,
            "groups_scored": self.groups_scored,
            "rule": "groups = same gold tool multiset or near-duplicate request (word Jaccard >= "
            f"{NEAR_DUPLICATE_JACCARD}), each group wholly in pool or scored",
        }


def tool_multiset(plan: dict[str, Any]) -> tuple[str, ...]:
    return tuple(sorted(str(node["tool"]) for node in plan.get("nodes", [])))


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def group_cases(cases: Sequence[Any], plan_of: Any) -> list[list[Any]]:
    """Union-find over 'same tool multiset' and 'near-duplicate request'."""
    parent = list(range(len(cases)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        parent[find(i)] = find(j)

    by_tools: dict[tuple[str, ...], int] = {}
    words = [_words(c.request) for c in cases]
    for i, case in enumerate(cases):
        key = tool_multiset(plan_of(case))
        if key in by_tools:
            union(i, by_tools[key])
        else:
            by_tools[key] = i
    for i in range(len(cases)):
        for j in range(i + 1, len(cases)):
            if _jaccard(words[i], words[j]) >= NEAR_DUPLICATE_JACCARD:
                union(i, j)
    groups: dict[int, list[Any]] = {}
    for i, case in enumerate(cases):
        groups.setdefault(find(i), []).append(case)
    return sorted(groups.values(), key=lambda g: min(c.id for c in g))


def template_disjoint_split(cases: Sequence[Any], plan_of: Any, *, seed: int = 13, pool_fraction: float = 0.5) -> Split:
    """Whole groups to the pool until it holds about `pool_fraction` of the requests."""
    groups = group_cases(cases, plan_of)
    order = list(range(len(groups)))
    random.Random(seed).shuffle(order)
    target = pool_fraction * len(cases)
    pool: list[Any] = []
    scored: list[Any] = []
    pool_groups = scored_groups = 0
    for index in order:
        group = groups[index]
        if len(pool) + len(group) / 2 <= target:
            pool.extend(group)
            pool_groups += 1
        else:
            scored.extend(group)
            scored_groups += 1
    pool.sort(key=lambda c: c.id)
    scored.sort(key=lambda c: c.id)
    return Split(pool, scored, seed, pool_groups, scored_groups)


def check_disjoint(split: Split, plan_of: Any) -> list[str]:
    """Problems if any gold tool multiset or near-duplicate request is on both sides (should be none)."""
    problems = []
    pool_sets = {tool_multiset(plan_of(c)) for c in split.pool}
    pool_words = [_words(c.request) for c in split.pool]
    for case in split.scored:
        if tool_multiset(plan_of(case)) in pool_sets:
            problems.append(f"{case.id}: its gold tool multiset is also in the pool")
        words = _words(case.request)
        if any(_jaccard(words, w) >= NEAR_DUPLICATE_JACCARD for w in pool_words):
            problems.append(f"{case.id}: a near-duplicate request is in the pool")
    return problems


def candidate_tools(
    gold_tools: Sequence[str], all_tools: Sequence[dict[str, Any]], *, size: int, key: str
) -> list[dict[str, Any]]:
    """The request's own tools plus seeded random distractors from the same catalog, in a seeded order."""
    by_name = {t["function"]["name"]: t for t in all_tools}
    chosen = list(dict.fromkeys(name for name in gold_tools if name in by_name))
    rng = random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:12], 16))
    others = sorted(name for name in by_name if name not in chosen)
    rng.shuffle(others)
    chosen += others[: max(0, size - len(chosen))]
    rng.shuffle(chosen)
    return [by_name[name] for name in chosen]

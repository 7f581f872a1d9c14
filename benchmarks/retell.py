"""Retellings of the realistic set: the same request with other values, for the online memory stream.

A tenant's users send the same kinds of requests again and again with other values ("flights from A
to B", then "from C to D"); what a corrected plan should teach is that structure. The realistic set was
written with one request per shape, mostly, so a stream of it alone has few repeats to learn from. A
retelling swaps the values a request states verbatim — quoted names and texts, e-mail addresses, long
identifiers and phone numbers — for others of the same kind, and its gold answer changes exactly where
the old value stood in it. A value that does not appear verbatim in the gold plan (a date the gold writes
in ISO form, an amount in minor units) is left as it was, so the pair stays consistent without any
interpretation. Requests with no such value have no retelling.

Rules, not examples: nothing here knows a request; the swap is chosen by a hash of the case id, so the
set is the same on every machine.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from benchmarks.apis import ApiCase

_QUOTED = re.compile(r"'([^']{2,80})'|\"([^\"]{2,80})\"|“([^”]{1,80})”|‘([^’]{1,80})’|「([^」]{1,80})」")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_IDENT = re.compile(r"(?<![\w@.-])\+?[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*(?![\w@-])")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

TITLES_EN = (
    "Budget sync",
    "Launch checklist",
    "Vendor review",
    "Team lunch",
    "Security audit",
    "Hiring plan",
    "Release notes",
    "Customer call",
    "Design critique",
    "Board update",
    "Onboarding guide",
    "Field notes",
)
TITLES_ZH = ("预算同步会", "发布清单", "供应商评审", "团队午餐", "安全审计", "招聘计划", "版本说明", "客户回访")
EMAILS = (
    "li.wei@example.org",
    "sam.ortiz@northwind.io",
    "priya@contoso.dev",
    "max.berg@fabrikam.net",
    "noor@tailspin.co",
    "kenji.sato@example.com",
)


def retell(case: ApiCase) -> ApiCase | None:
    """The case told with other values, or None when it states no value that can be swapped."""
    pick = _picker(case.id)
    swaps: dict[str, str] = {}
    leaves = [leaf for node in case.plan["nodes"] for leaf in _string_leaves(node.get("args", {}))]
    for found in _QUOTED.finditer(case.request):
        old = next(g for g in found.groups() if g is not None)
        pool = TITLES_ZH if _has_cjk(old) else TITLES_EN
        _offer(swaps, old, pick(pool, old), leaves)
    for found in _EMAIL.finditer(case.request):
        _offer(swaps, found.group(), pick(EMAILS, found.group()), leaves)
    for found in _IDENT.finditer(case.request):
        token = found.group()
        digits = sum(ch.isdigit() for ch in token)
        if len(token) >= 6 and digits >= 4 and not _ISO_DATE.fullmatch(token):
            _offer(swaps, token, _shift_digits(token), leaves)
    if not swaps:
        return None
    request = case.request
    for old, new in swaps.items():
        request = request.replace(old, new)
    nodes = [
        {**node, "args": _replace_leaves(node.get("args", {}), lambda t: _apply(t, swaps))}
        for node in case.plan["nodes"]
    ]
    plan = {**case.plan, "nodes": nodes}
    return replace(case, id=f"{case.id}~r", request=request, plan=plan)


def retold(cases: list[ApiCase]) -> list[ApiCase]:
    return [r for r in map(retell, cases) if r is not None]


def _offer(swaps: dict[str, str], old: str, new: str, leaves: list[str]) -> None:
    """Swap `old` only where the gold states it verbatim, for a value no other swap uses."""
    if old in swaps or new == old or new in swaps.values() or not any(old in leaf for leaf in leaves):
        return
    if any(old in other or other in old for other in swaps):  # nested values: keep the pair unambiguous
        return
    swaps[old] = new


def _picker(key: str) -> Callable[[tuple[str, ...], str], str]:
    taken: set[str] = set()

    def pick(pool: tuple[str, ...], old: str) -> str:
        digest = hashlib.sha256(f"{key}\0{old}".encode()).digest()
        choices = [p for p in pool if p != old and p not in taken] or [old]
        chosen = choices[digest[0] % len(choices)]
        taken.add(chosen)
        return chosen

    return pick


def _shift_digits(token: str) -> str:
    """Every digit but the first moved by 3: same length, same letters, same shape."""
    out, seen = [], False
    for ch in token:
        if ch.isdigit():
            out.append(ch if not seen else str((int(ch) + 3) % 10))
            seen = True
        else:
            out.append(ch)
    return "".join(out)


def _has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def _apply(text: str, swaps: dict[str, str]) -> str:
    for old, new in swaps.items():
        text = text.replace(old, new)
    return text


def _string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _string_leaves(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _string_leaves(item)]
    return []


def _replace_leaves(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_replace_leaves(item, change) for item in value]
    if isinstance(value, dict):
        return {key: _replace_leaves(item, change) for key, item in value.items()}
    return value

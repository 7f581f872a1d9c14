"""Plan cache: tenant-scoped, TTL, LRU-bounded.

The key is (tenant, catalog hash, planner fingerprint, request). The request keeps every character
that can change its meaning — case, signs, operators, quotes, punctuation ("5-3" is not "5+3", "10 > 3"
is not "10 < 3"); only runs of whitespace are folded and the ends stripped. The planner fingerprint
holds its configuration hash, the prompt version and the date relative dates resolve against.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from contract.plan import Plan

_SPACE = re.compile(r"\s+")


def normalise_request(request: str) -> str:
    """Unicode NFC, whitespace runs folded to one space, ends stripped; every other character kept."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", request)).strip()


@dataclass(frozen=True)
class CacheStats:
    hits: int
    misses: int
    evictions: int
    expirations: int
    size: int


class PlanCache:
    """Never shared across tenants: the tenant is part of every key."""

    def __init__(self, *, ttl_s: float, max_entries: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[tuple[str, str, str, str], tuple[float, Plan]] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.expirations = 0

    @staticmethod
    def key(tenant: str, request: str, catalog_hash: str, planner: str = "") -> tuple[str, str, str, str]:
        return tenant, catalog_hash, planner, normalise_request(request)

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0 and self.max_entries > 0

    def get(self, tenant: str, request: str, catalog_hash: str, planner: str = "") -> Plan | None:
        if not self.enabled:
            return None
        key = self.key(tenant, request, catalog_hash, planner)
        entry = self._entries.get(key)
        if entry is not None and entry[0] <= self.clock():
            del self._entries[key]
            self.expirations += 1
            entry = None
        if entry is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry[1]

    def put(self, tenant: str, request: str, catalog_hash: str, plan: Plan, planner: str = "") -> None:
        if not self.enabled:
            return
        key = self.key(tenant, request, catalog_hash, planner)
        self._entries[key] = (self.clock() + self.ttl_s, plan)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
            self.evictions += 1

    def clear(self, tenant: str | None = None) -> None:
        for key in [k for k in self._entries if tenant is None or k[0] == tenant]:
            del self._entries[key]

    def stats(self) -> CacheStats:
        return CacheStats(self.hits, self.misses, self.evictions, self.expirations, len(self._entries))

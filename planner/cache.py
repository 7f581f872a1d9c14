"""Plan cache: tenant-scoped, TTL, LRU-bounded, keyed on a normalised request and the catalog hash."""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from planner.plan import Plan

_PUNCT = re.compile(r"[^\w\s]+")
_SPACE = re.compile(r"\s+")


def normalise_request(request: str) -> str:
    """Lower-case, punctuation and whitespace folded to single spaces; numbers kept as written."""
    text = _PUNCT.sub(" ", request.lower().replace("_", " "))
    return _SPACE.sub(" ", text).strip()


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
        self._entries: OrderedDict[tuple[str, str, str], tuple[float, Plan]] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.expirations = 0

    @staticmethod
    def key(tenant: str, request: str, catalog_hash: str) -> tuple[str, str, str]:
        return tenant, catalog_hash, normalise_request(request)

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0 and self.max_entries > 0

    def get(self, tenant: str, request: str, catalog_hash: str) -> Plan | None:
        if not self.enabled:
            return None
        key = self.key(tenant, request, catalog_hash)
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

    def put(self, tenant: str, request: str, catalog_hash: str, plan: Plan) -> None:
        if not self.enabled:
            return
        key = self.key(tenant, request, catalog_hash)
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

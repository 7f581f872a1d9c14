"""Routing hints on engine requests, for an existing router in front of several engines.

With several vLLM replicas behind a router (vllm-router, see configs/deploy/), a tenant's prefix
cache is only useful if its requests keep landing on the same replica. The gateway already derives
a server-side `cache_salt` per isolation scope (serving/isolation.py): HMAC(secret, tenant) for
`tenant`, per session for `session`, random for `request`. The affinity key is a hash of that salt:

- stable exactly as long as the salt is (one tenant, or one session, always hashes to one replica;
  `request` scope gets a random key, which is right: its requests share no cache anyway);
- never the salt itself, so what the router logs (it logs its hash keys) or what an engine-side
  observer sees cannot be replayed as a `cache_salt`;
- a request without a salt carries no header, and the router falls back to its default placement.

vllm-router's `consistent_hash` policy reads a fixed list of headers (first `X-Session-ID`), not a
configurable one, so that is the default name; any router that hashes on a named header (nginx
`hash $http_x_session_id consistent`, HAProxy `balance hdr(X-Session-ID)`) works with it too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from serving.settings import EngineSettings

DEFAULT_AFFINITY_HEADER = "X-Session-ID"
_DOMAIN = b"planstack-affinity\x1f"


def affinity_key(cache_salt: str) -> str:
    """32 hex characters derived from a cache salt (one-way: the salt cannot be recovered)."""
    return hashlib.sha256(_DOMAIN + cache_salt.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class EngineRouting:
    """How engine requests are addressed to a router: the affinity header and the health path."""

    affinity_header: str = DEFAULT_AFFINITY_HEADER
    health_path: str = "/health"

    @classmethod
    def from_settings(cls, engine: EngineSettings) -> EngineRouting:
        return cls(affinity_header=engine.affinity_header, health_path=engine.health_path)

    def headers(self, body: Mapping[str, Any]) -> dict[str, str]:
        """Extra HTTP headers for an engine request with this JSON body (empty when disabled)."""
        salt = body.get("cache_salt")
        if not self.affinity_header or not isinstance(salt, str) or not salt:
            return {}
        return {self.affinity_header: affinity_key(salt)}


DIRECT = EngineRouting()

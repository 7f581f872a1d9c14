"""Server-side `cache_salt`: which requests may share the engine's prefix cache.

vLLM's automatic prefix cache reuses the KV blocks of any earlier request with the same prefix, and
that reuse is visible through time-to-first-token: a tenant could learn that someone else recently
sent a given prompt. vLLM only reuses blocks between requests with the same `cache_salt`, so the
gateway always sets it itself (a client's own salt is rejected or dropped, by configuration):

- `request`: a fresh random salt per request. No reuse at all: safest, every prompt is prefilled.
- `session`: HMAC(secret, tenant, session id from `X-Planstack-Session`). Reuse within one
  conversation of one tenant; without the header it behaves like `request`.
- `tenant` (default): HMAC(secret, tenant). Reuse within one tenant, e.g. the long planner system
  prompt and tool catalog, never across tenants.

The same secret derives each tenant's webhook signing key, under its own label
(`webhook_signing_key`): a tenant is given its key to verify its webhooks, and since every derived
value is an HMAC of a different message, that key tells it nothing about another tenant's key or
about any salt.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from pathlib import Path

from serving.errors import ConfigError, InvalidRequestError
from serving.private_files import load_or_create_private
from serving.settings import IsolationScope, Settings

logger = logging.getLogger("planstack.isolation")

SESSION_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def load_or_create_secret(path: Path) -> bytes:
    """The server secret in `path` (32 random bytes, hex), created once, atomically, with mode 0600.
    An existing file open to group/others, empty, or not hex is refused (ConfigError with the fix)."""
    text = load_or_create_private(path, lambda: secrets.token_hex(32), "cache-salt secret")
    try:
        value = bytes.fromhex(text)
    except ValueError:
        value = b""
    if len(value) < 16:
        raise ConfigError(
            f"the cache-salt secret {path} is not at least 16 bytes of hex",
            hint=f"delete it and a new one is created at the next start (rm {path}), or set PLANSTACK_SECRET",
        )
    return value


def server_secret(settings: Settings) -> bytes:
    """`PLANSTACK_SECRET`, else the secret file in the home folder."""
    if settings.secret is not None:
        return settings.secret.get_secret_value().encode()
    return load_or_create_secret(settings.home / "secret")


def webhook_signing_key(secret: bytes, tenant: str) -> bytes:
    """The key `tenant`'s webhooks are signed with: HMAC(secret, "webhook-signing" · tenant), for that use only."""
    return hmac.new(secret, "\x1f".join(("webhook-signing", tenant)).encode(), hashlib.sha256).digest()


class CacheSalter:
    """Derives the `cache_salt` for a request from the configured scope."""

    def __init__(self, scope: IsolationScope, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("the cache-salt secret must be at least 16 bytes")
        self.scope = scope
        self._secret = secret

    def _hmac(self, *parts: str) -> str:
        message = "\x1f".join(parts).encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def salt(self, tenant: str, session: str | None = None) -> str:
        """64 hex characters: within vLLM's limit (≤ 128, no '@', '/', '\\')."""
        if self.scope == "tenant":
            return self._hmac("tenant", tenant)
        if self.scope == "session" and session:
            if not SESSION_RE.match(session):
                raise InvalidRequestError(
                    "X-Planstack-Session must be 1-128 characters of letters, digits, '_', '.', ':', '-'",
                    param="X-Planstack-Session",
                )
            return self._hmac("session", tenant, session)
        return secrets.token_hex(32)

"""Bearer API keys → tenants, and what each key may do.

Keys come from `PLANSTACK_API_KEYS="key1=tenantA,key2=tenantB,key3=tenantA:approver"`. A key acts for
its tenant; a key with the `approver` scope may also decide on what waits for a person's approval
(`POST /v1/runs/{id}/approve|reject`), so the application that starts a run with its own key cannot
consent to its own held calls. Each key has a non-secret id (`key_…`, an HMAC of the key under the
server secret) that records which key decided, without the key.

With no keys configured, a single development key (`planstack-dev-key` → tenant `dev`, approver) is
accepted and every start logs a warning: it exists so that `make serve` works out of the box on
127.0.0.1. The key is published, so a gateway bound to any other address refuses to start without
real keys (`ApiKeyAuth.from_settings`).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import re
import socket
from dataclasses import dataclass

from serving.errors import AuthenticationError, ConfigError
from serving.isolation import server_secret
from serving.settings import Settings

logger = logging.getLogger("planstack.auth")

DEV_KEY = "planstack-dev-key"
DEV_TENANT = "dev"
TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
APPROVER = "approver"
"""The scope of a key that may decide on runs waiting for approval."""


SCOPES = frozenset({APPROVER})


@dataclass(frozen=True)
class Principal:
    """Who is calling: the tenant every record, cache and salt is scoped to, whether the key may decide
    approvals, and the key's non-secret id."""

    tenant: str
    dev_key: bool = False
    approver: bool = False
    key_id: str | None = None


def key_id(key: str, secret: bytes) -> str:
    """A key's id as records show it: HMAC(secret, "api-key-id" · key), 12 bytes in hex. Without the
    secret nobody learns the key from it, not even a short one by guessing."""
    digest = hmac.new(secret, "\x1f".join(("api-key-id", key)).encode(), hashlib.sha256).hexdigest()
    return "key_" + digest[:24]


class ApiKeyAuth:
    def __init__(self, keys: dict[str, Principal], *, dev_mode: bool) -> None:
        self._keys = keys
        self.dev_mode = dev_mode

    @classmethod
    def from_settings(cls, settings: Settings) -> ApiKeyAuth:
        """The gateway's keys; ConfigError when only the published development key would guard a
        gateway bound to a non-loopback address."""
        spec = settings.api_keys.get_secret_value() if settings.api_keys is not None else None
        host = settings.gateway.host
        if (not spec or not spec.strip()) and not is_loopback(host):
            raise ConfigError(
                f"refusing to serve on {host!r} with only the published development key {DEV_KEY!r}",
                hint="set PLANSTACK_API_KEYS='<key>=<tenant>,...' (keys of at least 8 characters), "
                "or bind to 127.0.0.1 (PLANSTACK_GATEWAY__HOST=127.0.0.1)",
            )
        return cls.from_spec(spec, secret=server_secret(settings))

    @classmethod
    def from_spec(cls, spec: str | None, *, secret: bytes = b"") -> ApiKeyAuth:
        """Parse `key=tenant[:approver],...`; None or empty → development mode. `secret` keys the keys'
        ids (the gateway passes the server secret)."""
        if not spec or not spec.strip():
            logger.warning(
                "PLANSTACK_API_KEYS is not set: accepting only the development key %r (tenant %r). "
                "Set PLANSTACK_API_KEYS before exposing this gateway.",
                DEV_KEY,
                DEV_TENANT,
            )
            dev = Principal(DEV_TENANT, dev_key=True, approver=True, key_id=key_id(DEV_KEY, secret))
            return cls({DEV_KEY: dev}, dev_mode=True)
        keys: dict[str, Principal] = {}
        for item in spec.split(","):
            key, sep, grant = item.strip().partition("=")
            tenant, *scopes = (part.strip() for part in grant.split(":"))
            key, granted = key.strip(), set(scopes)
            if not sep or len(key) < 8 or not TENANT_RE.match(tenant) or not granted <= SCOPES:
                raise ConfigError(
                    "PLANSTACK_API_KEYS must be `key=tenant[:approver],...` with keys of at least 8 characters "
                    "and tenants of letters, digits, '_', '.', '-' (at most 64); `:approver` lets the key "
                    "approve or reject held runs"
                )
            if key in keys:
                raise ConfigError("PLANSTACK_API_KEYS lists the same key twice")
            keys[key] = Principal(tenant, approver=APPROVER in granted, key_id=key_id(key, secret))
        return cls(keys, dev_mode=False)

    def authenticate(self, authorization: str | None) -> Principal:
        if not authorization:
            raise AuthenticationError("missing API key: send `Authorization: Bearer <key>`")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthenticationError("malformed Authorization header: expected `Bearer <key>`")
        found: Principal | None = None
        for key, who in self._keys.items():
            # Constant-time comparison over every key, so timing tells nothing about near misses.
            if hmac.compare_digest(key.encode(), token.encode()):
                found = who
        if found is None:
            raise AuthenticationError("invalid API key")
        return found


def is_loopback(host: str) -> bool:
    """True when every address `host` names is a loopback one (`localhost`, 127.0.0.0/8, ::1).
    An unspecified address (0.0.0.0, ::, "") binds every interface, so it is not loopback."""
    name = host.strip().strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)

"""Bearer API keys → tenants.

Keys come from `PLANSTACK_API_KEYS="key1=tenantA,key2=tenantB"`. With none configured, a single
development key (`planstack-dev-key` → tenant `dev`) is accepted and every start logs a warning: it
exists so that `make serve` works out of the box on 127.0.0.1. The key is published, so a gateway
bound to any other address refuses to start without real keys (`ApiKeyAuth.from_settings`).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
import socket
from dataclasses import dataclass

from serving.errors import AuthenticationError, ConfigError
from serving.settings import Settings

logger = logging.getLogger("planstack.auth")

DEV_KEY = "planstack-dev-key"
DEV_TENANT = "dev"
TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Principal:
    """Who is calling: the tenant every record, cache and salt is scoped to."""

    tenant: str
    dev_key: bool = False


class ApiKeyAuth:
    def __init__(self, keys: dict[str, str], *, dev_mode: bool) -> None:
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
        return cls.from_spec(spec)

    @classmethod
    def from_spec(cls, spec: str | None) -> ApiKeyAuth:
        """Parse `key=tenant,key=tenant`; None or empty → development mode."""
        if not spec or not spec.strip():
            logger.warning(
                "PLANSTACK_API_KEYS is not set: accepting only the development key %r (tenant %r). "
                "Set PLANSTACK_API_KEYS before exposing this gateway.",
                DEV_KEY,
                DEV_TENANT,
            )
            return cls({DEV_KEY: DEV_TENANT}, dev_mode=True)
        keys: dict[str, str] = {}
        for item in spec.split(","):
            key, sep, tenant = item.strip().partition("=")
            key, tenant = key.strip(), tenant.strip()
            if not sep or len(key) < 8 or not TENANT_RE.match(tenant):
                raise ConfigError(
                    "PLANSTACK_API_KEYS must be `key=tenant,...` with keys of at least 8 characters "
                    "and tenants of letters, digits, '_', '.', '-' (at most 64)"
                )
            if key in keys:
                raise ConfigError("PLANSTACK_API_KEYS lists the same key twice")
            keys[key] = tenant
        return cls(keys, dev_mode=False)

    def authenticate(self, authorization: str | None) -> Principal:
        if not authorization:
            raise AuthenticationError("missing API key: send `Authorization: Bearer <key>`")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthenticationError("malformed Authorization header: expected `Bearer <key>`")
        for key, tenant in self._keys.items():
            # Constant-time comparison over every key, so timing tells nothing about near misses.
            if hmac.compare_digest(key.encode(), token.encode()):
                return Principal(tenant=tenant, dev_key=self.dev_mode)
        raise AuthenticationError("invalid API key")


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

"""How a toolset authenticates to its service: the scheme (stored in clear) and the secret (stored
sealed, see credentials.py), turned into request headers only at the moment a request is built."""

from __future__ import annotations

import base64
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from executors.sources.credentials import SecretValue

RESERVED_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer", "idempotency-key"}
)
_HEADER_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


class AuthScheme(BaseModel):
    """`bearer` (Authorization: Bearer <secret>), `api_key_header` (<header>: <secret>) or `basic`
    (`username` here, the password is the secret)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["none", "bearer", "api_key_header", "basic"] = "none"
    header: str | None = Field(default=None, max_length=64, description="The header of an `api_key_header` key.")
    username: str | None = Field(default=None, max_length=256, description="The user of `basic`.")

    @model_validator(mode="after")
    def _complete(self) -> AuthScheme:
        if self.kind == "api_key_header":
            if not self.header or not set(self.header) <= _HEADER_NAME_CHARS:
                raise ValueError("api_key_header needs `header`: a header name (letters, digits, '-', '_')")
            if self.header.lower() in RESERVED_HEADERS:
                raise ValueError(f"{self.header} is set by planstack, not by a credential")
        if self.kind == "basic" and (not self.username or ":" in self.username):
            raise ValueError("basic needs `username` (without ':')")
        return self

    @property
    def needs_secret(self) -> bool:
        return self.kind != "none"

    def header_name(self) -> str | None:
        """The header this scheme sets (so a tool argument cannot set it too)."""
        if self.kind in ("bearer", "basic"):
            return "Authorization"
        return self.header if self.kind == "api_key_header" else None

    def headers(self, secret: SecretValue | None) -> dict[str, str]:
        """The request headers carrying `secret`; never logged, never stored."""
        if self.kind == "none":
            return {}
        if secret is None:
            raise ValueError(f"the {self.kind} scheme needs its secret")
        value = secret.reveal()
        if any(c in value for c in "\r\n\0"):
            raise ValueError("a credential cannot contain line breaks")
        if self.kind == "bearer":
            return {"Authorization": f"Bearer {value}"}
        if self.kind == "basic":
            token = base64.b64encode(f"{self.username}:{value}".encode()).decode()
            return {"Authorization": f"Basic {token}"}
        assert self.header is not None
        return {self.header: value}

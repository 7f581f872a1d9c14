"""Toolset credentials: write-only secrets, encrypted at rest.

A tenant gives a token, an API key or a password once, when it registers a toolset; it is sealed
at once and stored only sealed; nothing ever returns it. `CredentialSealer` seals with AES-256-GCM
under a key derived by HKDF-SHA256 from the server's secret (bytes handed over by the gateway,
which reads its secret file; the executors never read it themselves). The associated data binds
each ciphertext to its tenant, toolset and slot (which credential of the toolset it is), so a
ciphertext copied to another tenant's or toolset's row does not open, and a flipped bit is detected.

Keys have ids: the sealer holds the current key and any older ones still needed, seals with the
current one and opens with the one the sealed text names; `needs_rotation` + `reseal` move stored
secrets to the current key (e.g. after the operator rotates the secret file).

`SecretValue` is what an opened secret is: its `repr`/`str`/format show only a mask, it cannot be
pickled, and only `reveal()` gives the text (called where a header is built, nowhere else).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from executors.sources.errors import CredentialError

FORMAT = "psc1"  # the sealed-text format: psc1.<key id>.<nonce>.<ciphertext+tag>, base64url
MIN_SERVER_SECRET_BYTES = 16
MAX_SECRET_CHARS = 8192
_HKDF_SALT = b"planstack toolset credentials"
_NONCE_BYTES = 12
_MASK = "********"


class SecretValue:
    """A secret's text that does not show itself: masked in repr/str/format, not picklable."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise ValueError("a secret is a non-empty string")
        if len(value) > MAX_SECRET_CHARS:
            raise ValueError(f"a secret is at most {MAX_SECRET_CHARS} characters")
        self._value = value

    def reveal(self) -> str:
        """The secret itself: only where it goes on the wire."""
        return self._value

    def __repr__(self) -> str:
        return f"SecretValue('{_MASK}')"

    def __str__(self) -> str:
        return _MASK

    def __format__(self, spec: str) -> str:
        return _MASK

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SecretValue):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash(hashlib.sha256(self._value.encode()).digest())

    def __reduce__(self) -> NoReturn:
        raise TypeError("a SecretValue cannot be pickled")


@dataclass(frozen=True)
class SealedSecret:
    """One encrypted secret as stored: the key id, the nonce and the ciphertext (with its tag)."""

    key_id: str
    nonce: bytes
    ciphertext: bytes

    def to_text(self) -> str:
        return ".".join((FORMAT, self.key_id, _b64(self.nonce), _b64(self.ciphertext)))

    @classmethod
    def from_text(cls, text: str) -> SealedSecret:
        parts = text.split(".") if isinstance(text, str) and len(text) < 4 * MAX_SECRET_CHARS else []
        if len(parts) != 4 or parts[0] != FORMAT:
            raise CredentialError("not a sealed credential")
        try:
            nonce, ciphertext = _unb64(parts[2]), _unb64(parts[3])
        except (binascii.Error, ValueError):
            raise CredentialError("not a sealed credential") from None
        if len(nonce) != _NONCE_BYTES:
            raise CredentialError("not a sealed credential")
        return cls(parts[1], nonce, ciphertext)

    def __repr__(self) -> str:
        return f"SealedSecret(key_id={self.key_id!r}, {len(self.ciphertext)} bytes)"


class CredentialSealer:
    """Seals and opens toolset secrets with keys derived from the server's secret(s).

    `keys` maps a key id to a server secret (bytes, ≥ 16); `current` is the id new secrets are
    sealed with. Key ids are short names (letters, digits, '-', '_')."""

    def __init__(self, keys: Mapping[str, bytes], current: str) -> None:
        if current not in keys:
            raise ValueError(f"the current key id {current!r} is not among the keys")
        self._ciphers: dict[str, AESGCM] = {}
        for key_id, secret in keys.items():
            if not key_id or len(key_id) > 32 or not all(c.isalnum() or c in "-_" for c in key_id):
                raise ValueError(f"key id {key_id!r}: 1-32 letters, digits, '-' or '_'")
            if not isinstance(secret, bytes) or len(secret) < MIN_SERVER_SECRET_BYTES:
                raise ValueError(f"key {key_id!r}: the server secret must be at least {MIN_SERVER_SECRET_BYTES} bytes")
            self._ciphers[key_id] = AESGCM(_derive_key(secret, key_id))
        self.current = current

    @classmethod
    def from_secret(cls, secret: bytes, key_id: str = "k1") -> CredentialSealer:
        return cls({key_id: secret}, key_id)

    def seal(self, value: str | SecretValue, *, tenant: str, toolset: str, slot: str) -> SealedSecret:
        """`value` encrypted for exactly this tenant, toolset and slot, under the current key."""
        secret = value if isinstance(value, SecretValue) else SecretValue(value)
        nonce = os.urandom(_NONCE_BYTES)
        aad = _associated_data(self.current, tenant, toolset, slot)
        ciphertext = self._ciphers[self.current].encrypt(nonce, secret.reveal().encode("utf-8"), aad)
        return SealedSecret(self.current, nonce, ciphertext)

    def open(self, sealed: SealedSecret | str, *, tenant: str, toolset: str, slot: str) -> SecretValue:
        """The secret, if `sealed` was sealed by this server for this tenant, toolset and slot;
        CredentialError otherwise (the same message whatever went wrong)."""
        box = SealedSecret.from_text(sealed) if isinstance(sealed, str) else sealed
        cipher = self._ciphers.get(box.key_id)
        if cipher is None:
            raise CredentialError(
                "the credential cannot be opened", hint="it was sealed under a key this server does not have"
            )
        try:
            plain = cipher.decrypt(box.nonce, box.ciphertext, _associated_data(box.key_id, tenant, toolset, slot))
            return SecretValue(plain.decode("utf-8"))
        except (InvalidTag, UnicodeDecodeError, ValueError):
            raise CredentialError(
                "the credential cannot be opened", hint="tampered with, or sealed for another tenant or toolset"
            ) from None

    def needs_rotation(self, sealed: SealedSecret | str) -> bool:
        box = SealedSecret.from_text(sealed) if isinstance(sealed, str) else sealed
        return box.key_id != self.current

    def reseal(self, sealed: SealedSecret | str, *, tenant: str, toolset: str, slot: str) -> SealedSecret:
        """The same secret sealed under the current key (for a rotation pass over stored secrets)."""
        secret = self.open(sealed, tenant=tenant, toolset=toolset, slot=slot)
        return self.seal(secret, tenant=tenant, toolset=toolset, slot=slot)

    def __repr__(self) -> str:
        return f"CredentialSealer(current={self.current!r}, keys={sorted(self._ciphers)!r})"

    def __reduce__(self) -> Any:
        raise TypeError("a CredentialSealer cannot be pickled")


def _derive_key(secret: bytes, key_id: str) -> bytes:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=_HKDF_SALT, info=b"aes-256-gcm key " + key_id.encode())
    return hkdf.derive(secret)


def _associated_data(key_id: str, tenant: str, toolset: str, slot: str) -> bytes:
    """Length-prefixed fields, so no two different (tenant, toolset, slot) give the same bytes."""
    out = bytearray(FORMAT.encode())
    for part in (key_id, tenant, toolset, slot):
        raw = part.encode("utf-8")
        out += len(raw).to_bytes(4, "big") + raw
    return bytes(out)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

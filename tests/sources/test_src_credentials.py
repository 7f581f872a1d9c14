"""Toolset credentials: sealed with AES-GCM under an HKDF key, bound to tenant/toolset/slot, rotated
by key id, and never shown (repr, str, format, pickle, exceptions, logs)."""

from __future__ import annotations

import logging
import pickle

import pytest

from executors.sources.auth import AuthScheme
from executors.sources.credentials import CredentialSealer, SealedSecret, SecretValue
from executors.sources.errors import CredentialError

SERVER_SECRET = b"0123456789abcdef0123456789abcdef"
TOKEN = "tok-9f8e7d6c5b4a-very-secret"
WHERE = {"tenant": "tenantA", "toolset": "ts_billing", "slot": "auth"}


def test_a_sealed_secret_opens_only_where_it_was_sealed() -> None:
    sealer = CredentialSealer.from_secret(SERVER_SECRET)
    text = sealer.seal(TOKEN, **WHERE).to_text()
    assert TOKEN not in text and text.startswith("psc1.k1.")
    assert sealer.open(text, **WHERE).reveal() == TOKEN
    assert sealer.seal(TOKEN, **WHERE).to_text() != text  # a fresh nonce every time
    for moved in ({"tenant": "tenantB"}, {"toolset": "ts_other"}, {"slot": "header"}):
        with pytest.raises(CredentialError):
            sealer.open(text, **{**WHERE, **moved})
    with pytest.raises(CredentialError):  # another server's secret derives another key
        CredentialSealer.from_secret(b"another server secret, 32 bytes!").open(text, **WHERE)


def test_tampering_is_detected() -> None:
    sealer = CredentialSealer.from_secret(SERVER_SECRET)
    box = sealer.seal(TOKEN, **WHERE)
    for i in (0, len(box.ciphertext) // 2, len(box.ciphertext) - 1):  # body and tag
        flipped = bytearray(box.ciphertext)
        flipped[i] ^= 0x01
        with pytest.raises(CredentialError):
            sealer.open(SealedSecret(box.key_id, box.nonce, bytes(flipped)), **WHERE)
    with pytest.raises(CredentialError):
        sealer.open(SealedSecret(box.key_id, bytes(12), box.ciphertext), **WHERE)
    for garbage in ("", "psc1.k1.x", "psc2.k1.AAAA.AAAA", "psc1.k1.!!!.AAAA", "x" * 100_000):
        with pytest.raises(CredentialError):
            sealer.open(garbage, **WHERE)


def test_rotation_by_key_id() -> None:
    old = CredentialSealer.from_secret(SERVER_SECRET, "k1")
    stored = old.seal(TOKEN, **WHERE)
    rotated = CredentialSealer({"k1": SERVER_SECRET, "k2": b"the next server secret, 32 bytes"}, current="k2")
    assert rotated.open(stored, **WHERE).reveal() == TOKEN
    assert rotated.needs_rotation(stored)
    fresh = rotated.reseal(stored, **WHERE)
    assert fresh.key_id == "k2" and not rotated.needs_rotation(fresh)
    with pytest.raises(CredentialError):  # once k1 is retired, what it sealed no longer opens
        CredentialSealer({"k2": b"the next server secret, 32 bytes"}, current="k2").open(stored, **WHERE)
    assert rotated.open(fresh, **WHERE) == SecretValue(TOKEN)


def test_weak_or_unknown_keys_are_refused() -> None:
    with pytest.raises(ValueError):
        CredentialSealer.from_secret(b"short")
    with pytest.raises(ValueError):
        CredentialSealer({"k1": SERVER_SECRET}, current="k9")
    with pytest.raises(ValueError):
        CredentialSealer({"bad.id": SERVER_SECRET}, current="bad.id")


def test_a_secret_never_shows_itself(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    sealer = CredentialSealer.from_secret(SERVER_SECRET)
    secret = sealer.open(sealer.seal(TOKEN, **WHERE), **WHERE)
    shown = [repr(secret), str(secret), f"{secret}", f"{secret!r}", f"{secret:>20}", repr([secret]), repr(sealer)]
    shown.append(repr(sealer.seal(secret, **WHERE)))
    assert all(TOKEN not in text for text in shown)
    logging.getLogger("planstack.test").info("using %s / %r", secret, secret)
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    with pytest.raises(CredentialError) as moved:
        sealer.open(sealer.seal(secret, **WHERE), **{**WHERE, "tenant": "tenantB"})
    assert TOKEN not in str(moved.value) and TOKEN not in moved.value.explained and TOKEN not in repr(moved.value)
    with pytest.raises(ValueError) as bad:
        AuthScheme(kind="bearer").headers(SecretValue(TOKEN + "\r\nX-Injected: 1"))
    assert TOKEN not in str(bad.value)
    assert TOKEN not in caplog.text


@pytest.mark.parametrize(
    ("scheme", "expected"),
    [
        (AuthScheme(kind="bearer"), {"Authorization": f"Bearer {TOKEN}"}),
        (AuthScheme(kind="api_key_header", header="X-Api-Key"), {"X-Api-Key": TOKEN}),
        (AuthScheme(kind="basic", username="svc"), {"Authorization": "Basic c3ZjOnRvay05ZjhlN2Q2YzViNGEtdmVyeS1zZWNyZXQ="}),
        (AuthScheme(), {}),
    ],
)
def test_auth_schemes_put_the_secret_in_the_right_header(scheme: AuthScheme, expected: dict[str, str]) -> None:
    assert scheme.headers(SecretValue(TOKEN) if scheme.needs_secret else None) == expected


def test_auth_schemes_refuse_reserved_headers() -> None:
    for header in ("Host", "Idempotency-Key", "Content-Length", "bad header"):
        with pytest.raises(ValueError):
            AuthScheme(kind="api_key_header", header=header)
    with pytest.raises(ValueError):
        AuthScheme(kind="basic")

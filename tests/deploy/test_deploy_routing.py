"""serving/routing.py: the affinity header derived from the cache salt, and its settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from serving.isolation import CacheSalter
from serving.routing import DIRECT, EngineRouting, affinity_key
from serving.settings import EngineSettings

SECRET = b"0123456789abcdef0123456789abcdef"


def test_the_key_is_stable_per_tenant_distinct_across_tenants_and_not_the_salt() -> None:
    salter = CacheSalter("tenant", SECRET)
    salt_a, salt_b = salter.salt("alice"), salter.salt("bob")
    assert affinity_key(salt_a) == affinity_key(salter.salt("alice"))
    assert affinity_key(salt_a) != affinity_key(salt_b)
    key = affinity_key(salt_a)
    assert len(key) == 32 and int(key, 16) >= 0
    assert key not in salt_a and salt_a not in key


def test_session_scope_keys_follow_the_session_and_request_scope_keys_are_fresh() -> None:
    session = CacheSalter("session", SECRET)
    assert affinity_key(session.salt("alice", "s1")) == affinity_key(session.salt("alice", "s1"))
    assert affinity_key(session.salt("alice", "s1")) != affinity_key(session.salt("alice", "s2"))
    request = CacheSalter("request", SECRET)
    assert affinity_key(request.salt("alice")) != affinity_key(request.salt("alice"))


def test_headers_only_when_a_salt_is_present_and_the_header_is_enabled() -> None:
    body = {"model": "m", "cache_salt": "abc"}
    assert DIRECT.headers(body) == {"X-Session-ID": affinity_key("abc")}
    assert EngineRouting(affinity_header="X-Planstack-Affinity").headers(body) == {
        "X-Planstack-Affinity": affinity_key("abc")
    }
    assert EngineRouting(affinity_header="").headers(body) == {}
    assert DIRECT.headers({"model": "m"}) == {} and DIRECT.headers({"cache_salt": ""}) == {}


def test_settings_feed_the_routing_and_reject_bad_header_names_and_paths() -> None:
    routing = EngineRouting.from_settings(EngineSettings(affinity_header="", health_path="/readiness"))
    assert routing == EngineRouting(affinity_header="", health_path="/readiness")
    for bad in ({"affinity_header": "X Bad"}, {"affinity_header": "X:y"}, {"affinity_header": "a" * 65},
                {"health_path": "readiness"}, {"health_path": "/x?y=1"}, {"health_path": "//evil.example/"}):  # fmt: skip
        with pytest.raises(ValidationError):
            EngineSettings(**bad)  # type: ignore[arg-type]

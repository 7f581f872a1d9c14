"""The egress policy: which destinations tool sources may reach, checked again at connect time.

Policy checks run without a network (an injected resolver answers); the connect-time checks use a
REAL loopback service (tests/sources/odd_service.py) and the real egress transport."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import pytest

from executors.sources.egress import ClientLimits, EgressPolicy, StaticResolver, egress_client
from executors.sources.errors import EgressRefused, RedirectRefused, ResponseTooLarge
from tests.sources.odd_service import OddService, create_odd_service
from tests.sources.tls import TlsServerThread, make_certificates

T = TypeVar("T")
PUBLIC = "93.184.216.34"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


class RecordingResolver:
    """Answers from a list of answers, one per lookup (the last one repeats): DNS that changes."""

    def __init__(self, *answers: Sequence[str]) -> None:
        self.answers = [list(a) for a in answers]
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        return self.answers[min(len(self.lookups), len(self.answers)) - 1]


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


# -- the policy, without a network ----------------------------------------------------------------


def test_a_host_outside_the_policy_is_a_400_before_any_lookup() -> None:
    resolver = RecordingResolver([PUBLIC])
    policy = EgressPolicy(hosts=("api.example.com",))
    with pytest.raises(EgressRefused) as refused:
        run(policy.check_resolved("https://evil.example.net/mcp", resolver))
    assert (refused.value.status, refused.value.code, refused.value.retryable) == (400, "egress_refused", False)
    assert resolver.lookups == []  # nothing about the name was looked up, so nothing can leak
    assert run(policy.check_resolved("https://api.example.com/v1", RecordingResolver([PUBLIC]))) == [PUBLIC]


@pytest.mark.parametrize(
    ("pattern", "host", "allowed"),
    [
        ("api.example.com", "api.example.com", True),
        ("api.example.com", "API.Example.com.", True),
        ("api.example.com", "x.api.example.com", False),
        ("*.example.com", "a.b.example.com", True),
        ("*.example.com", "example.com", False),
        ("*.example.com", "badexample.com", False),
        ("*", "anything.example.org", True),
    ],
)
def test_host_patterns(pattern: str, host: str, allowed: bool) -> None:
    policy = EgressPolicy(hosts=(pattern,))
    if allowed:
        assert policy.check_url(f"https://{host}/") == (host.lower(), 443)
    else:
        with pytest.raises(EgressRefused):
            policy.check_url(f"https://{host}/")


def test_schemes_ports_and_credentials_in_urls() -> None:
    policy = EgressPolicy(hosts=("*",))
    for url in ("http://api.example.com/", "https://api.example.com:8443/", "ftp://api.example.com/",
                "https://user:pw@api.example.com/", "not a url at all"):
        with pytest.raises(EgressRefused):
            policy.check_url(url)
    wider = EgressPolicy(hosts=("*",), ports=(443, "8000-8999"), schemes=("https", "http"))
    assert wider.check_url("http://api.example.com:8443/") == ("api.example.com", 8443)
    for url in ("http://api.example.com/x", "http://api.example.com:9000/"):  # ports 80 and 9000: not listed
        with pytest.raises(EgressRefused):
            wider.check_url(url)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "::1",
        "169.254.169.254",
        "fd00:ec2::254",
        "100.100.100.200",
        "10.0.0.5",
        "192.168.1.1",
        "172.16.0.1",
        "0.0.0.0",
        "::",
        "224.0.0.1",
        "::ffff:127.0.0.1",
        "fe80::1",
    ],
)
def test_a_name_resolving_to_a_non_public_address_is_refused(address: str) -> None:
    policy = EgressPolicy(hosts=("*",))
    resolver = StaticResolver({"innocent.example.com": [address]})
    with pytest.raises(EgressRefused) as refused:
        run(policy.check_resolved("https://innocent.example.com/", resolver))
    assert address not in str(refused.value) and address not in refused.value.explained  # DNS is not revealed
    assert address in refused.value.reason  # ...but the operator's log can say why


def test_every_resolved_address_must_pass() -> None:
    policy = EgressPolicy(hosts=("*",))
    with pytest.raises(EgressRefused):
        run(policy.check_resolved("https://two.example.com/", StaticResolver({"two.example.com": [PUBLIC, "127.0.0.1"]})))


def test_a_cidr_allows_private_addresses_but_metadata_only_when_named_exactly() -> None:
    corp = EgressPolicy(hosts=("*.corp.example",), cidrs=("10.0.0.0/8", "169.254.0.0/16", "0.0.0.0/0"))
    resolver = StaticResolver({"billing.corp.example": ["10.1.2.3"], "meta.corp.example": ["169.254.169.254"]})
    assert run(corp.check_resolved("https://billing.corp.example/", resolver)) == ["10.1.2.3"]
    with pytest.raises(EgressRefused):  # a broad range does not open the metadata endpoint
        run(corp.check_resolved("https://meta.corp.example/", resolver))
    exact = EgressPolicy(hosts=("*.corp.example",), cidrs=("169.254.169.254/32",))
    assert run(exact.check_resolved("https://meta.corp.example/", resolver)) == ["169.254.169.254"]


def test_an_ip_literal_needs_a_cidr() -> None:
    with pytest.raises(EgressRefused):
        EgressPolicy(hosts=("*",)).check_url(f"https://{PUBLIC}/")
    assert EgressPolicy(cidrs=(f"{PUBLIC}/32",)).check_url(f"https://{PUBLIC}/") == (PUBLIC, 443)


def test_the_policy_refuses_bad_configuration() -> None:
    for bad in ({"hosts": ("*.*.example.com",)}, {"hosts": ("a/b",)}, {"cidrs": ("nope",)}, {"ports": ("10-5",)},
                {"ports": (0,)}):
        with pytest.raises(ValueError):
            EgressPolicy(**bad)


# -- at connect time, against a real loopback service --------------------------------------------


def test_a_name_pinned_to_an_allowed_loopback_address_reaches_the_service_under_its_name(
    odd_service: OddService,
) -> None:
    port = port_of(odd_service.url)
    policy = EgressPolicy(hosts=("billing.internal",), cidrs=("127.0.0.0/8",), ports=(port,), schemes=("http",))
    resolver = RecordingResolver(["127.0.0.1"])

    async def go() -> dict[str, Any]:
        async with egress_client(policy, resolver=resolver) as client:
            response = await client.get(f"http://billing.internal:{port}/echo")
            return dict(response.json())

    echoed = run(go())
    # No real DNS knows this name: the connection went to the checked address, the Host kept the name.
    assert echoed["headers"]["host"] == f"billing.internal:{port}"
    assert resolver.lookups == ["billing.internal"]


def test_dns_rebinding_to_loopback_is_refused_at_connect_time(odd_service: OddService) -> None:
    port = port_of(odd_service.url)
    policy = EgressPolicy(hosts=("*",), ports=(port,), schemes=("http",))  # no CIDR: loopback not allowed
    resolver = RecordingResolver([PUBLIC], ["127.0.0.1"])
    url = f"http://rebind.example.com:{port}/echo"
    assert run(policy.check_resolved(url, resolver)) == [PUBLIC]  # registration saw a public address

    async def go() -> None:
        async with egress_client(policy, resolver=resolver) as client:
            await client.get(url)

    with pytest.raises(EgressRefused):
        run(go())
    assert odd_service.hits["echo"] == 0


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254"])
def test_loopback_and_metadata_are_refused_at_connect_time_unless_a_cidr_allows(
    odd_service: OddService, address: str
) -> None:
    port = port_of(odd_service.url)
    resolver = StaticResolver({"svc.example.com": [address]})

    async def get(policy: EgressPolicy, url: str) -> int:
        async with egress_client(policy, resolver=resolver) as client:
            return (await client.get(url)).status_code

    closed = EgressPolicy(hosts=("*",), cidrs=("169.254.0.0/16",), ports=(port,), schemes=("http",))
    for url in (f"http://svc.example.com:{port}/echo", f"http://127.0.0.1:{port}/echo"):
        with pytest.raises(EgressRefused):
            run(get(closed, url))
    assert odd_service.hits["echo"] == 0
    if address == "127.0.0.1":
        opened = EgressPolicy(hosts=("*",), cidrs=("127.0.0.0/8",), ports=(port,), schemes=("http",))
        assert run(get(opened, f"http://svc.example.com:{port}/echo")) == 200


def test_redirects_are_refused_not_followed(odd_service: OddService, loopback_policy: EgressPolicy) -> None:
    async def go() -> None:
        async with egress_client(loopback_policy) as client:
            await client.get(f"{odd_service.url}/redirect")

    with pytest.raises(RedirectRefused) as refused:
        run(go())
    assert "302" in str(refused.value) and "/echo" in (refused.value.hint or "")
    assert odd_service.hits["redirect"] == 1 and odd_service.hits["echo"] == 0


def test_bodies_over_the_cap_are_refused_without_reading_them(
    odd_service: OddService, loopback_policy: EgressPolicy
) -> None:
    limits = ClientLimits(max_response_bytes=100_000)

    async def size_of(path: str) -> int:
        async with egress_client(loopback_policy, limits) as client:
            return len((await client.get(f"{odd_service.url}{path}")).content)

    assert run(size_of("/big?size=50000")) == 50_000
    for path in ("/big?size=5000000", "/big-declared?size=5000000"):
        with pytest.raises(ResponseTooLarge):
            run(size_of(path))


def test_time_and_connections_are_bounded(odd_service: OddService, loopback_policy: EgressPolicy) -> None:
    limits = ClientLimits(read_timeout_s=0.5, max_connections=1, pool_timeout_s=0.5)

    async def go() -> None:
        async with egress_client(loopback_policy, limits) as client:
            with pytest.raises(httpx2.ReadTimeout):
                await client.get(f"{odd_service.url}/slow")
            async with client.stream("GET", f"{odd_service.url}/big?size=10"):
                # this unread answer holds the pool's only connection: the next request cannot get one
                with pytest.raises(httpx2.PoolTimeout):
                    await client.get(f"{odd_service.url}/echo")
            assert (await client.get(f"{odd_service.url}/echo")).status_code == 200

    run(go())
    assert odd_service.hits["slow"] == 1 and odd_service.hits["echo"] == 1


def test_proxies_from_the_environment_are_not_used(
    odd_service: OddService, loopback_policy: EgressPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there

    async def go() -> int:
        async with egress_client(loopback_policy) as client:
            return (await client.get(f"{odd_service.url}/echo")).status_code

    assert run(go()) == 200


# -- TLS: verified against the NAME, while the connection goes to the pinned address ---------------


@pytest.fixture
def tls_service(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    ca_file, cert_file, key_file = make_certificates(tmp_path, "secure.internal")
    server = TlsServerThread(create_odd_service(OddService()), cert_file, key_file).start()
    yield server.port, ca_file
    server.stop()


def test_tls_is_verified_against_the_name_with_the_operators_ca_bundle(tls_service: tuple[int, Path]) -> None:
    port, ca_file = tls_service
    resolver = StaticResolver({"secure.internal": ["127.0.0.1"], "other.internal": ["127.0.0.1"]})

    async def get(policy: EgressPolicy, host: str) -> dict[str, Any]:
        async with egress_client(policy, resolver=resolver) as client:
            return dict((await client.get(f"https://{host}:{port}/echo")).json())

    def policy(**extra: Any) -> EgressPolicy:
        return EgressPolicy(hosts=("*.internal",), cidrs=("127.0.0.0/8",), ports=(port,), **extra)

    trusted = policy(ca_bundle=str(ca_file))
    assert run(get(trusted, "secure.internal"))["headers"]["host"] == f"secure.internal:{port}"
    with pytest.raises(httpx2.ConnectError):  # the certificate is for secure.internal, not this name
        run(get(trusted, "other.internal"))
    with pytest.raises(httpx2.ConnectError):  # verification is on by default: the test CA is not trusted
        run(get(policy(), "secure.internal"))
    assert run(get(policy(verify_tls=False), "other.internal"))["method"] == "GET"  # the operator's explicit choice

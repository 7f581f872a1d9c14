"""Where tool sources may connect: the operator's egress policy, enforced at connect time.

A tenant registers URLs (an MCP server, an OpenAPI service's base URL); the gateway then connects
there from inside the operator's network, so a URL is also a way to reach what the tenant could not
reach itself: loopback services, the cloud metadata endpoint, private addresses. `EgressPolicy`
says what is allowed:

- `hosts`: names that may be used, exact (`api.example.com`) or by suffix (`*.example.com`; `*` is
  any name). An IP-literal URL is allowed only inside `cidrs`.
- `cidrs`: address ranges connections may go to, including private ones. Loopback, private,
  link-local, multicast, unspecified and other non-global addresses are refused unless a CIDR
  covers them; a cloud metadata address only when a CIDR names exactly that address (/32, /128).
- `ports` and `schemes` (https only unless the operator adds http).

The check runs when the connection is opened, not when the URL is registered: the name is resolved,
EVERY address it resolves to must pass, and the TCP connection goes to a checked address (the
resolution is pinned for that connection; TLS SNI, certificate checking and the Host header keep
the name). A name that resolved to a public address at registration and to 127.0.0.1 or
169.254.169.254 later (DNS rebinding) is refused. Registration calls `check_resolved` so a refused
URL is a 400 at once rather than a failed run later.

`egress_client` builds the one `httpx2.AsyncClient` (one connection pool, with limits) of a
toolset: no redirects (a 3xx raises `RedirectRefused`), no proxies or netrc from the environment,
TLS verified by default (optional CA bundle), bounded time, and bodies capped at
`max_response_bytes` (read streamed; a body over the cap raises `ResponseTooLarge` without being
read to the end). The resolver is injectable (tests make a name resolve to 127.0.0.1 or
169.254.169.254).

Why httpx2 (not httpx or aiohttp): the official MCP SDK (2.x) does all its HTTP through an
`httpx2.AsyncClient` it accepts from the caller, and httpcore2's connection pool takes a custom
network backend, which is exactly the seam DNS pinning needs (resolve and check, then connect to
the checked address, while TLS and Host keep the name). One transport therefore enforces the policy
for MCP sessions and for OpenAPI calls alike; with aiohttp the MCP traffic would bypass it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import httpcore2
import httpx2
from pydantic import BaseModel, ConfigDict, Field, field_validator

from executors.sources.errors import EgressRefused, RedirectRefused, ResponseTooLarge

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

DEFAULT_PORTS = {"http": 80, "https": 443}
# Cloud instance-metadata endpoints (AWS/GCP/Azure/OpenStack, ECS task metadata, Alibaba, Oracle,
# AWS over IPv6, Azure's wire server). Some are not even private addresses, so they are named here.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "100.100.100.200",
        "192.0.0.192",
        "168.63.129.16",
        "fd00:ec2::254",
    )
)
REFUSED = "refused by the operator's egress policy"


class EgressPolicy(BaseModel):
    """The operator's rule for outbound tool calls (configuration `tools.egress`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hosts: tuple[str, ...] = Field(default=(), description="Allowed names: exact, '*.suffix', or '*' for any name.")
    cidrs: tuple[str, ...] = Field(default=(), description="Allowed address ranges (the only way to private ones).")
    ports: tuple[int | str, ...] = Field(default=(443,), description="Allowed ports: numbers or 'low-high' ranges.")
    schemes: tuple[Literal["https", "http"], ...] = ("https",)
    verify_tls: bool = Field(default=True, description="Check the server's certificate (off only by the operator).")
    ca_bundle: str | None = Field(default=None, description="PEM file of extra trusted CAs (e.g. an internal CA).")

    @field_validator("hosts")
    @classmethod
    def _valid_hosts(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        cleaned = []
        for host in hosts:
            name = host.strip().lower().rstrip(".")
            bare = name[2:] if name.startswith("*.") else name
            if name != "*" and (not bare or "*" in bare or "/" in bare or ":" in bare):
                raise ValueError(f"host pattern {host!r}: use a name, '*.suffix' or '*'")
            cleaned.append(name)
        return tuple(cleaned)

    @field_validator("cidrs")
    @classmethod
    def _valid_cidrs(cls, cidrs: tuple[str, ...]) -> tuple[str, ...]:
        for cidr in cidrs:
            ipaddress.ip_network(cidr, strict=False)  # ValueError names the bad one
        return cidrs

    @field_validator("ports")
    @classmethod
    def _valid_ports(cls, ports: tuple[int | str, ...]) -> tuple[int | str, ...]:
        for port in ports:
            low, high = _port_range(port)
            if not 1 <= low <= high <= 65535:
                raise ValueError(f"port {port!r}: must be 1-65535 or a 'low-high' range")
        return ports

    # -- the checks ---------------------------------------------------------------------------

    def check_url(self, url: str | httpx2.URL) -> tuple[str, int]:
        """(host, port) of an allowed URL; EgressRefused for a refused scheme, host or port. Needs no
        network: registration calls `check_resolved`, connections re-check everything."""
        try:
            parsed = httpx2.URL(url) if isinstance(url, str) else url
        except httpx2.InvalidURL:
            raise EgressRefused("not a valid URL", reason="unparsable URL") from None
        scheme, host = parsed.scheme, parsed.host
        if scheme not in self.schemes:
            raise EgressRefused(f"{scheme or 'this'} URLs are {REFUSED}", reason=f"scheme {scheme!r}")
        if not host:
            raise EgressRefused("the URL has no host", reason="no host")
        if parsed.userinfo:
            raise EgressRefused("credentials in the URL are not accepted", hint="use the toolset's credentials")
        port = parsed.port or DEFAULT_PORTS[scheme]
        self.check_destination(host, port)
        return host, port

    def check_destination(self, host: str, port: int) -> bool:
        """Is (host, port) allowed before resolution? Returns whether the host was allowed by NAME
        (an IP literal is allowed only by a CIDR). Raises EgressRefused otherwise."""
        if not any(low <= port <= high for low, high in map(_port_range, self.ports)):
            raise EgressRefused(f"{_shown(host)}:{port} is {REFUSED}", reason=f"port {port} not allowed")
        literal = _as_address(host)
        if literal is not None:
            if not any(literal in net for net in self._networks()):
                raise EgressRefused(f"{_shown(host)}:{port} is {REFUSED}", reason="address outside the CIDRs")
            return False
        name = host.lower().rstrip(".")
        if not any(_name_matches(pattern, name) for pattern in self.hosts):
            raise EgressRefused(f"{_shown(host)}:{port} is {REFUSED}", reason="host not in the allowed hosts")
        return True

    def check_addresses(self, host: str, port: int, addresses: Sequence[str], *, allowed_by_name: bool) -> None:
        """Every address `host` resolved to must be allowed; else EgressRefused (same message
        whatever the address was, so the answer does not reveal the tenant's DNS)."""
        if not addresses:
            raise EgressRefused(f"{_shown(host)}:{port} is {REFUSED}", reason="resolved to no address")
        for text in addresses:
            address = _as_address(text)
            if address is None or not self.address_allowed(address, allowed_by_name=allowed_by_name):
                raise EgressRefused(f"{_shown(host)}:{port} is {REFUSED}", reason=f"resolved to {text}")

    def address_allowed(self, address: IPAddress, *, allowed_by_name: bool) -> bool:
        address = _unmapped(address)
        covering = [net for net in self._networks() if address in net]
        if address in METADATA_ADDRESSES:
            return any(net.num_addresses == 1 for net in covering)
        if covering:
            return True
        return allowed_by_name and address.is_global and not address.is_multicast

    async def check_resolved(self, url: str, resolver: Resolver | None = None) -> list[str]:
        """The registration check: the URL passes `check_url` and every address its host resolves
        to now is allowed. Returns those addresses (connections resolve and check again)."""
        host, port = self.check_url(url)
        allowed_by_name = self.check_destination(host, port)
        addresses = await resolve(resolver or system_resolver, host, port, timeout_s=10.0)
        self.check_addresses(host, port, addresses, allowed_by_name=allowed_by_name)
        return addresses

    def _networks(self) -> list[IPNetwork]:
        return [ipaddress.ip_network(cidr, strict=False) for cidr in self.cidrs]


class ClientLimits(BaseModel):
    """How much one toolset's HTTP client may use: connections, time and response size."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_connections: int = Field(default=10, ge=1, le=1000)
    max_keepalive_connections: int = Field(default=5, ge=0, le=1000)
    keepalive_expiry_s: float = Field(default=30.0, gt=0)
    connect_timeout_s: float = Field(default=5.0, gt=0, description="Name resolution and TCP/TLS connect.")
    read_timeout_s: float = Field(default=30.0, gt=0, description="Longest wait for the next bytes of a response.")
    write_timeout_s: float = Field(default=30.0, gt=0)
    pool_timeout_s: float = Field(default=10.0, gt=0, description="Longest wait for a free connection of the pool.")
    max_response_bytes: int = Field(default=1 << 20, ge=1024, description="Bodies larger than this are refused.")

    def timeout(self) -> httpx2.Timeout:
        return httpx2.Timeout(
            connect=self.connect_timeout_s,
            read=self.read_timeout_s,
            write=self.write_timeout_s,
            pool=self.pool_timeout_s,
        )


# -- resolution ---------------------------------------------------------------------------------


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses of `host` from the system resolver, in its order, without duplicates."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class StaticResolver:
    """A resolver answering from a fixed table (tests; an operator's hosts file). Unknown names fail
    like an unknown name in DNS."""

    def __init__(self, table: Mapping[str, Sequence[str]]) -> None:
        self._table = {name.lower().rstrip("."): list(addresses) for name, addresses in table.items()}

    async def __call__(self, host: str, port: int) -> list[str]:
        try:
            return list(self._table[host.lower().rstrip(".")])
        except KeyError:
            raise socket.gaierror(socket.EAI_NONAME, "name not known") from None


async def resolve(resolver: Resolver, host: str, port: int, *, timeout_s: float | None) -> list[str]:
    """`host`'s addresses (an IP literal is its own), bounded in time; connection errors, not
    egress refusals, when the name cannot be resolved."""
    if _as_address(host) is not None:
        return [host]
    try:
        async with asyncio.timeout(timeout_s):
            return list(await resolver(host, port))
    except TimeoutError:
        raise httpcore2.ConnectTimeout(f"resolving {_shown(host)} timed out") from None
    except OSError:
        raise httpcore2.ConnectError(f"{_shown(host)} could not be resolved") from None


# -- the transport ------------------------------------------------------------------------------


class PinnedNetworkBackend(httpcore2.AsyncNetworkBackend):
    """httpcore2's network backend with the policy in front: resolve, check every address, then
    connect to a checked address (never let the socket layer resolve the name again)."""

    def __init__(self, policy: EgressPolicy, resolver: Resolver, inner: httpcore2.AsyncNetworkBackend) -> None:
        self._policy = policy
        self._resolver = resolver
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        allowed_by_name = self._policy.check_destination(host, port)
        addresses = await resolve(self._resolver, host, port, timeout_s=timeout)
        self._policy.check_addresses(host, port, addresses, allowed_by_name=allowed_by_name)
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout):
                continue
        raise httpcore2.ConnectError(f"could not connect to {_shown(host)}:{port}")

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        raise EgressRefused(f"unix sockets are {REFUSED}", reason="unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _CappedStream(httpx2.AsyncByteStream):
    """A response body that raises ResponseTooLarge once more than `cap` bytes have arrived."""

    def __init__(self, inner: httpx2.AsyncByteStream, cap: int) -> None:
        self._inner = inner
        self._cap = cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._cap:
                await self._inner.aclose()
                raise ResponseTooLarge(f"the response is larger than {self._cap} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class EgressTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport over a connection pool whose connections go through
    `PinnedNetworkBackend`; 3xx answers and oversized bodies are refused here, for every caller."""

    def __init__(self, policy: EgressPolicy, limits: ClientLimits, resolver: Resolver = system_resolver) -> None:
        context = tls_context(policy)
        super().__init__(verify=context, trust_env=False)
        # The pool httpx2 built cannot take a network backend, so it is replaced by one that does
        # (same settings httpx2 would pass; httpx2's exception mapping and streaming stay in use).
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry_s,
            network_backend=PinnedNetworkBackend(policy, resolver, httpcore2.AnyIOBackend()),
        )
        self._policy = policy
        self._cap = limits.max_response_bytes

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self._policy.check_url(request.url)
        response = await super().handle_async_request(request)
        if 300 <= response.status_code < 400:
            await response.aclose()
            location = response.headers.get("location", "")[:200]
            raise RedirectRefused(
                f"the service answered HTTP {response.status_code} (a redirect); redirects are not followed",
                hint=f"point the toolset at the final URL{': ' + location if location else ''}",
            )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._cap:
            await response.aclose()
            raise ResponseTooLarge(f"the response is larger than {self._cap} bytes")
        if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            return response  # a stream of events (MCP): the SDK bounds each event, not the stream
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CappedStream(stream, self._cap),
            extensions=response.extensions,
        )


def tls_context(policy: EgressPolicy) -> ssl.SSLContext:
    """The TLS settings of every egress connection: verified (system CAs, plus the operator's CA
    bundle when given) unless the operator turned verification off."""
    if not policy.verify_tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if policy.ca_bundle:
        context = ssl.create_default_context()
        context.load_verify_locations(cafile=policy.ca_bundle)
        return context
    return httpcore2.default_ssl_context()


def egress_client(
    policy: EgressPolicy,
    limits: ClientLimits | None = None,
    *,
    resolver: Resolver = system_resolver,
    headers: Mapping[str, str] | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    event_hooks: Mapping[str, list[Callable[..., Any]]] | None = None,
) -> httpx2.AsyncClient:
    """One toolset's HTTP client: one pool through `EgressTransport` (or `transport`, a view of a
    shared one), no redirects, nothing taken from the environment."""
    limits = limits or ClientLimits()
    return httpx2.AsyncClient(
        transport=transport or EgressTransport(policy, limits, resolver),
        headers=dict(headers or {}),
        timeout=limits.timeout(),
        follow_redirects=False,
        trust_env=False,
        event_hooks={key: list(value) for key, value in (event_hooks or {}).items()},
    )


class SharedTransport(httpx2.AsyncBaseTransport):
    """A view of a transport that several clients share; closing the view leaves the pool open
    (its owner closes the real transport)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        return None


# -- helpers ------------------------------------------------------------------------------------


def _port_range(port: int | str) -> tuple[int, int]:
    if isinstance(port, int):
        return port, port
    low, sep, high = port.partition("-")
    try:
        return (int(low), int(high)) if sep else (int(low), int(low))
    except ValueError:
        return 0, -1


def _as_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _unmapped(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _name_matches(pattern: str, name: str) -> bool:
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return name.endswith(pattern[1:]) and len(name) > len(pattern) - 1
    return name == pattern


def _shown(host: str) -> str:
    """The host as the caller wrote it, bounded (it goes into messages)."""
    return host[:253]

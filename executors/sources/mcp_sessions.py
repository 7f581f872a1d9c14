"""One pooled MCP session per toolset, reconnecting after a server restart.

The SDK's `mcp.Client` is an async context manager that owns task groups (the transport's reader
and writer), so it must be entered and left by one task. `McpSessionPool` gives it one: a
supervisor task holds the live session open until the pool closes or the session breaks; calls
from any task are requests over that session (the SDK multiplexes them). When the transport dies
(server gone, stream broken) the session is marked dead and the next call opens a new one.

Server restarts: a server on the 2026-07-28 protocol keeps no session, so a restarted server just
answers. A handshake-era server forgets its sessions; the spec says a 404 to a request carrying
`Mcp-Session-Id` means the session is gone and the client must start a new one. The pool watches
for exactly that answer (an httpx2 response hook per session) and then reconnects and sends the
request once more: a request refused that way was not processed, so resending cannot repeat it.

`notifications/tools/list_changed` arrives either as a notification (handshake era) or on a
`subscriptions/listen` stream (2026-07-28, opened and acknowledged before the session is used, when
the server announces `tools.listChanged`); both end in `on_tools_changed` (so does every reconnect:
the list may have changed while no session was listening), run in its own task (never inside the
SDK's message loop, which a refresh needs free) and coalesced so a burst of notifications makes at
most one refresh in flight plus one after it.

Endpoints: `HttpEndpoint` (streamable HTTP through the toolset's egress-checked client) and
`StdioEndpoint` (a local command speaking MCP on stdin/stdout). A stdio server is a process the
gateway starts with its own privileges: only the operator's configuration may name one, never a
tenant's request (the wiring enforces this; nothing here can tell who asked).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, Implementation
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from contract.errors import PlanstackBaseError
from executors.errors import ToolError
from executors.sources.auth import AuthScheme
from executors.sources.credentials import SecretValue
from executors.sources.egress import (
    ClientLimits,
    EgressPolicy,
    EgressTransport,
    Resolver,
    SharedTransport,
    egress_client,
    system_resolver,
)

logger = logging.getLogger("planstack.sources.mcp")
T = TypeVar("T")
Streams = Any  # the SDK's (read stream, write stream) pair
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
CLIENT_INFO = Implementation(name="planstack", version="1")


class SessionUnavailable(PlanstackBaseError):
    """No session could be opened (nothing was sent); `__cause__` says why."""


@dataclass(eq=False)
class LiveSession:
    """One connected session and what is known about its health."""

    client: Client | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    dead: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    failure: BaseException | None = None
    session_gone: bool = False  # the server answered 404 to our session id
    task: asyncio.Task[None] | None = None

    @property
    def usable(self) -> bool:
        return self.client is not None and not self.dead.is_set() and not self.session_gone


class Endpoint(Protocol):
    """Where a session connects; `transport(session)` opens the SDK's stream pair for one session."""

    def transport(self, session: LiveSession) -> AbstractAsyncContextManager[Streams]: ...

    async def aclose(self) -> None: ...


class HttpEndpoint:
    """A streamable-HTTP MCP server, reached through the toolset's egress-checked connection pool.

    `auth` + `secret` (the toolset's opened credential) give the header sent with every request;
    it is put on each session's client when the session opens, never logged."""

    def __init__(
        self,
        url: str,
        policy: EgressPolicy,
        limits: ClientLimits | None = None,
        *,
        resolver: Resolver = system_resolver,
        auth: AuthScheme | None = None,
        secret: SecretValue | None = None,
    ) -> None:
        policy.check_url(url)
        self.url = url
        self._limits = limits or ClientLimits()
        self._policy = policy
        self._resolver = resolver
        self._auth = auth or AuthScheme()
        self._auth.headers(secret)  # a missing or malformed secret fails now, not at the first call
        self._secret = secret
        self._pool = EgressTransport(policy, self._limits, resolver)

    @asynccontextmanager
    async def _open(self, session: LiveSession) -> AsyncIterator[Streams]:
        async def watch(response: httpx2.Response) -> None:
            if response.status_code == 404 and "mcp-session-id" in response.request.headers:
                session.session_gone = True

        client = egress_client(
            self._policy,
            self._limits,
            headers=self._auth.headers(self._secret),
            transport=SharedTransport(self._pool),
            event_hooks={"response": [watch]},
        )
        async with (
            client,
            streamable_http_client(
                self.url, http_client=client, max_sse_event_size=self._limits.max_response_bytes
            ) as streams,
        ):
            yield streams

    def transport(self, session: LiveSession) -> AbstractAsyncContextManager[Streams]:
        return self._open(session)

    async def aclose(self) -> None:
        await self._pool.aclose()

    def __repr__(self) -> str:
        return f"HttpEndpoint({self.url!r})"


class StdioEndpoint:
    """A local MCP server started as a subprocess (OPERATOR CONFIGURATION ONLY, see module doc)."""

    def __init__(
        self, command: str, args: Sequence[str] = (), *, env: Mapping[str, str] | None = None, cwd: str | None = None
    ) -> None:
        self._params = StdioServerParameters(command=command, args=list(args), env=dict(env) if env else None, cwd=cwd)

    def transport(self, session: LiveSession) -> AbstractAsyncContextManager[Streams]:
        return stdio_client(self._params)

    async def aclose(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"StdioEndpoint({self._params.command!r})"


class McpSessionPool:
    """The pooled session of one toolset (see module doc). `mode` is the SDK's: "auto" (negotiate,
    falling back to the handshake), "legacy" (handshake only) or a modern protocol version."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        on_tools_changed: Callable[[], Awaitable[None]] | None = None,
        mode: str = "auto",
        connect_timeout_s: float = 10.0,
    ) -> None:
        self.endpoint = endpoint
        self._on_tools_changed = on_tools_changed
        self._mode = mode
        self._connect_timeout_s = connect_timeout_s
        self._live: LiveSession | None = None
        self._lock = asyncio.Lock()
        self._refresh: asyncio.Task[None] | None = None
        self._refresh_again = False
        self._closed = False
        self.connects = 0  # sessions opened so far (observability, tests)

    async def request(self, op: Callable[[Client], Awaitable[T]], *, timeout_s: float) -> T:
        """Run `op` on the live session (connecting first when needed), bounded by `timeout_s`.
        A request the server refused because it forgot the session is sent once more on a new one."""
        for attempt in (1, 2):
            session = await self.session()
            try:
                async with asyncio.timeout(timeout_s):
                    assert session.client is not None
                    return await op(session.client)
            except MCPError as exc:
                if session.session_gone:
                    await self._retire(session)
                    if attempt == 1:
                        continue
                elif exc.code == CONNECTION_CLOSED:
                    await self._retire(session)  # waits for the session's end, so its cause is known
                    for leaf in leaf_errors(session.failure) if session.failure is not None else []:
                        if isinstance(leaf, ToolError):
                            raise leaf from None  # e.g. an oversized response: say so, not 'connection lost'
                raise
        raise AssertionError("unreachable")

    async def session(self) -> LiveSession:
        """The live session, opened (bounded by the connect timeout) when there is none or it broke;
        `SessionUnavailable` (with what stopped it as its cause) when it cannot be opened."""
        async with self._lock:
            if self._closed:
                raise RuntimeError("the MCP session pool is closed")
            live = self._live
            if live is not None and live.usable:
                return live
            if live is not None:
                await self._stop(live)
            live = LiveSession()
            live.task = asyncio.create_task(self._supervise(live), name=f"mcp-session {self.endpoint!r}")
            self._live = live
            self.connects += 1
            try:
                async with asyncio.timeout(self._connect_timeout_s):
                    await live.ready.wait()
            except TimeoutError as exc:
                await self._stop(live)
                raise SessionUnavailable("connecting timed out") from exc
            if live.client is None or live.dead.is_set():
                raise SessionUnavailable("the session could not be opened") from live.failure
            if self.connects > 1:
                self._tools_changed()  # changes made while no session listened (e.g. a restarted server)
            return live

    async def mark_broken(self, session: LiveSession) -> None:
        """Forget `session` (e.g. after a 'connection closed' error): the next request reconnects."""
        await self._retire(session)

    async def aclose(self) -> None:
        async with self._lock:
            self._closed = True
            if self._live is not None:
                await self._stop(self._live)
                self._live = None
        if self._refresh is not None:
            self._refresh.cancel()
            await asyncio.gather(self._refresh, return_exceptions=True)
        await self.endpoint.aclose()

    # -- the supervisor -------------------------------------------------------------------------

    async def _supervise(self, live: LiveSession) -> None:
        try:
            client = Client(
                self.endpoint.transport(live),
                mode=self._mode,
                message_handler=self._on_message,
                client_info=CLIENT_INFO,
                cache=None,  # the toolset keeps its own snapshot; a refresh must reach the server
            )
            async with client, AsyncExitStack() as stack:
                subscription = None
                if self._wants_listen(client):
                    try:  # acknowledged before the session is used: no change can slip in between
                        subscription = await stack.enter_async_context(client.listen(tools_list_changed=True))
                    except Exception as exc:  # the server lists tools but will not stream changes
                        logger.info("no tools/list_changed stream from %r: %s", self.endpoint, _describe(exc))
                live.client = client
                live.ready.set()
                async with anyio.create_task_group() as group:
                    if subscription is not None:
                        group.start_soon(self._drain, subscription)
                    await live.stop.wait()
                    group.cancel_scope.cancel()
        except Exception as exc:  # the session's end: recorded, turned into a typed error by the caller
            live.failure = exc
            logger.info("MCP session to %r ended: %s", self.endpoint, _describe(exc))
        finally:
            live.dead.set()
            live.ready.set()

    def _wants_listen(self, client: Client) -> bool:
        if self._on_tools_changed is None or client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return False
        tools = client.server_capabilities.tools
        return bool(tools and tools.list_changed)

    async def _drain(self, subscription: AsyncIterable[Any]) -> None:
        try:
            async for _event in subscription:
                self._tools_changed()
        except Exception as exc:  # a lost stream ends listening; the next session listens again
            logger.info("tools/list_changed stream of %r ended: %s", self.endpoint, _describe(exc))

    async def _on_message(self, message: Any) -> None:
        if getattr(message, "method", None) == TOOLS_LIST_CHANGED:
            self._tools_changed()

    def _tools_changed(self) -> None:
        if self._on_tools_changed is None or self._closed:
            return
        if self._refresh is not None and not self._refresh.done():
            self._refresh_again = True
            return
        self._refresh = asyncio.create_task(self._run_refresh(self._on_tools_changed))

    async def _run_refresh(self, callback: Callable[[], Awaitable[None]]) -> None:
        while True:
            self._refresh_again = False
            try:
                await callback()
            except Exception as exc:  # a failed refresh keeps the previous snapshot
                logger.warning("refreshing the tools of %r failed: %s", self.endpoint, _describe(exc))
            if not self._refresh_again:
                return

    async def _retire(self, session: LiveSession) -> None:
        async with self._lock:
            if self._live is session:
                self._live = None
            await self._stop(session)

    @staticmethod
    async def _stop(session: LiveSession) -> None:
        session.stop.set()
        if session.task is None or session.task.done():
            return
        try:
            async with asyncio.timeout(5.0):
                await asyncio.shield(session.task)
        except TimeoutError:
            session.task.cancel()
            await asyncio.gather(session.task, return_exceptions=True)


def leaf_errors(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or `exc` itself."""
    inner = getattr(exc, "exceptions", None)  # an (Base)ExceptionGroup
    if isinstance(inner, tuple) and all(isinstance(item, BaseException) for item in inner):
        return [leaf for item in inner for leaf in leaf_errors(item)]
    return [exc]


def _describe(exc: BaseException) -> str:
    return "; ".join(f"{type(leaf).__name__}: {leaf}"[:300] for leaf in leaf_errors(exc)[:3])

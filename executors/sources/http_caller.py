"""OpenAPI services as a tool source: one imported operation, one HTTP request.

The importer (`serving.toolsets.openapi_import`) turns each operation into a `RemoteTool` whose
`binding` (`HttpBinding`) says where each argument goes. `build_request` follows it: path
variables URL-encoded (a whole segment each; `.`/`..` refused), query parameters (arrays as
repeated keys), headers, and a body made of the `body` arguments (a JSON object, or form fields
where the document declares only `application/x-www-form-urlencoded`) or of the one whole-body JSON
argument; the toolset's auth (bearer, API-key header, basic) from its decrypted secret.

Side effects and retries: `GET`/`PUT`/`DELETE`/`HEAD` may be sent again as they are. A `POST` or
`PATCH` carries an `Idempotency-Key` derived from (run, round, node) (`CallContext`), the same
for every attempt of that node and after a takeover on another replica, so a service that honours
the header creates once; without a run context no key is sent and such a call is never retried.

Answers: 2xx JSON → the output (an empty body → `{}`; non-JSON → `{"text": ...}`, bounded); 3xx →
`RedirectRefused` (the egress transport never follows one); 408/429/5xx and transport failures →
`RemoteUnavailable`, retryable only when sending again is safe (see above; a connection that was
never opened sent nothing, so that one always is), carrying the service's `Retry-After` (bounded;
a longer wait is not retried); other 4xx → `RemoteToolError` with the status and a bounded excerpt
of the body as data. Every call is egress-checked, bounded in time (the tool's timeout) and size.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import httpx2

from executors.errors import ToolArgumentError, ToolError, ToolOutputError, ToolTimeoutError
from executors.sources.auth import RESERVED_HEADERS, AuthScheme
from executors.sources.credentials import SecretValue
from executors.sources.egress import ClientLimits, EgressPolicy, Resolver, egress_client, system_resolver
from executors.sources.errors import RemoteToolError, RemoteUnavailable, SourceError, bounded_text
from executors.sources.http_binding import HttpBinding
from executors.sources.tool_source import CallContext, RemoteTool, ToolSnapshot

IDEMPOTENCY_HEADER = "Idempotency-Key"
MAX_TEXT_CHARS = 100_000
PARSE_OFF_LOOP_BYTES = 64 * 1024
_PATH_VARIABLE = re.compile(r"\{([^{}/]+)\}")


def build_request(
    binding: HttpBinding,
    args: Mapping[str, Any],
    *,
    base_url: str,
    headers: Mapping[str, str] | None = None,
    idempotency_key: str | None = None,
    protected_headers: frozenset[str] = frozenset(),
) -> httpx2.Request:
    """The request for one call of `binding` (ToolArgumentError when the arguments do not fit)."""
    by_argument = {item.argument: item for item in binding.arguments}
    unknown = sorted(set(args) - set(by_argument))
    if unknown:
        raise ToolArgumentError(f"arguments {unknown} have no place in the {binding.method} {binding.path} request")
    path_values: dict[str, str] = {}
    query: list[tuple[str, str]] = []
    sent_headers: dict[str, str] = {"Accept": "application/json", "User-Agent": "planstack"}
    body_fields: dict[str, Any] = {}
    whole_body: Any = None
    has_whole_body = False
    refused_headers = RESERVED_HEADERS | {name.lower() for name in protected_headers}
    for argument, value in args.items():
        item = by_argument[argument]
        if value is None and item.location != "body":
            continue
        if item.location == "path":
            path_values[item.name] = _path_segment(argument, value)
        elif item.location == "query":
            values = value if isinstance(value, list) else [value]
            query.extend((item.name, _scalar_text(argument, v)) for v in values)
        elif item.location == "header":
            if item.name.lower() in refused_headers:
                raise ToolArgumentError(f"header {item.name!r} is set by planstack, not by an argument")
            values = value if isinstance(value, list) else [value]
            sent_headers[item.name] = _header_text(argument, ",".join(_scalar_text(argument, v) for v in values))
        elif binding.body == "whole":
            whole_body, has_whole_body = value, True
        else:
            body_fields[item.name] = value

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in path_values:
            raise ToolArgumentError(f"path variable {{{name}}} of {binding.path} has no value")
        return path_values[name]

    path = _PATH_VARIABLE.sub(fill, binding.path)
    url = base_url.rstrip("/") + "/" + path.lstrip("/")
    if idempotency_key is not None:
        sent_headers[IDEMPOTENCY_HEADER] = idempotency_key
    sent_headers.update(headers or {})
    content: bytes | None = None
    form = binding.encoding == "form"
    if binding.body == "properties" and (body_fields or binding.method in ("POST", "PUT", "PATCH")):
        content = _form(body_fields) if form else json.dumps(body_fields, ensure_ascii=False).encode()
    elif binding.body == "whole" and has_whole_body:
        form = form and isinstance(whole_body, dict)
        content = _form(whole_body) if form else json.dumps(whole_body, ensure_ascii=False).encode()
    if content is not None:
        sent_headers["Content-Type"] = "application/x-www-form-urlencoded" if form else "application/json"
    return httpx2.Request(binding.method, url, params=tuple(query), headers=sent_headers, content=content)


class HttpToolSource:
    """The operations of one imported OpenAPI document as a `ToolSource` (one per toolset).

    The tools come from the import (stored with the toolset), so `refresh` returns them as they are;
    a new document is a new import. `secret` is the toolset's opened credential for `auth`."""

    def __init__(
        self,
        source_id: str,
        base_url: str,
        snapshot: ToolSnapshot,
        *,
        policy: EgressPolicy,
        limits: ClientLimits | None = None,
        resolver: Resolver = system_resolver,
        auth: AuthScheme | None = None,
        secret: SecretValue | None = None,
        max_retry_after_s: float = 30.0,
    ) -> None:
        policy.check_url(base_url)
        parsed = httpx2.URL(base_url)
        if parsed.query or parsed.fragment:
            raise SourceError("the base URL cannot have a query or a fragment")
        missing = [tool.name for tool in snapshot.tools if tool.binding is None]
        if missing:
            raise SourceError(f"tools without an HTTP binding: {missing}")
        self._source_id = source_id
        self._base_url = base_url
        self._snapshot = snapshot
        self._auth = auth or AuthScheme()
        self._auth.headers(secret)  # checked now: a missing or malformed secret fails when the source is built
        self._secret = secret  # revealed only into each request's headers
        self._max_retry_after_s = max_retry_after_s
        self._client = egress_client(policy, limits, resolver=resolver)

    @property
    def source_id(self) -> str:
        return self._source_id

    def snapshot(self) -> ToolSnapshot:
        return self._snapshot

    async def refresh(self) -> ToolSnapshot:
        return self._snapshot

    async def call(self, tool: RemoteTool, args: Mapping[str, Any], context: CallContext) -> Any:
        binding = tool.binding
        if binding is None:
            raise ToolArgumentError(f"{tool.name} has no HTTP binding")
        key = None if binding.idempotent else context.idempotency_key()
        safe = binding.idempotent or key is not None
        protected = frozenset({self._auth.header_name() or ""} - {""})
        request = build_request(
            binding,
            args,
            base_url=self._base_url,
            headers=self._auth.headers(self._secret),
            idempotency_key=key,
            protected_headers=protected,
        )
        where = f"{tool.name} ({binding.method} {binding.path})"
        try:
            async with asyncio.timeout(tool.policy.timeout_s):
                response = await self._client.send(request, stream=True)
                try:
                    body = await response.aread()
                finally:
                    await response.aclose()
        except ToolError:
            raise  # egress refusal, redirect, oversized body: typed already
        except (TimeoutError, httpx2.TimeoutException) as exc:
            error = ToolTimeoutError(f"{where} did not answer within {tool.policy.timeout_s:g} s")
            error.retryable = safe or isinstance(exc, httpx2.ConnectTimeout)  # no connection: nothing sent
            raise error from None
        except httpx2.ConnectError:
            raise RemoteUnavailable(f"{where}: the service could not be reached", retryable=True) from None
        except httpx2.TransportError as exc:
            raise RemoteUnavailable(f"{where}: the connection failed ({type(exc).__name__})", retryable=safe) from None
        return await self._answer(where, response, body, safe)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _answer(self, where: str, response: httpx2.Response, body: bytes, safe: bool) -> Any:
        status = response.status_code
        if 200 <= status < 300:
            return await _output(where, response, body)
        data = {"status": status, "message": bounded_text(body.decode("utf-8", errors="replace"))}
        if status in (408, 429) or status >= 500:
            delay = retry_after_s(response.headers.get("retry-after"))
            too_long = delay is not None and delay > self._max_retry_after_s
            limit = self._max_retry_after_s
            hint = f"the service asked to wait {delay:g} s, more than {limit:g} s" if too_long else None
            raise RemoteUnavailable(
                f"{where}: the service answered HTTP {status}",
                retryable=safe and not too_long,
                retry_delay_s=delay if not too_long else None,
                data=data,
                hint=hint,
            )
        raise RemoteToolError(f"{where}: the service answered HTTP {status} (its answer is in data)", data=data)


async def _output(where: str, response: httpx2.Response, body: bytes) -> Any:
    if not body.strip():
        return {}
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        try:
            if len(body) > PARSE_OFF_LOOP_BYTES:
                return await asyncio.to_thread(json.loads, body)
            return json.loads(body)
        except ValueError:
            raise ToolOutputError(f"{where}: the answer says JSON but is not valid JSON") from None
    return {"text": bounded_text(body.decode(response.encoding or "utf-8", errors="replace"), MAX_TEXT_CHARS)}


def retry_after_s(value: str | None, *, now: float | None = None) -> float | None:
    """A `Retry-After` header (seconds or an HTTP date) in seconds from now; None when absent or
    unreadable."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text[:9]))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _form(fields: dict[str, Any]) -> bytes:
    """Form fields: a list repeats its key (`To=a&To=b`), an object is its JSON text, null is left out."""
    pairs: list[tuple[str, str]] = []
    for name, value in fields.items():
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                pairs.append((name, _scalar_text(name, item)))
    return urlencode(pairs).encode()


def _scalar_text(argument: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    raise ToolArgumentError(f"argument {argument!r}: {type(value).__name__} cannot go into a URL or header")


def _path_segment(argument: str, value: Any) -> str:
    if isinstance(value, list):
        text = ",".join(_scalar_text(argument, v) for v in value)
    else:
        text = _scalar_text(argument, value)
    if text in ("", ".", ".."):
        raise ToolArgumentError(f"argument {argument!r}: {text!r} is not a path segment")
    return quote(text, safe="")


def _header_text(argument: str, text: str) -> str:
    if any(c in text for c in "\r\n\0"):
        raise ToolArgumentError(f"argument {argument!r}: a header value cannot contain line breaks")
    return text

"""`planstack toolsets add|list|show|refresh|delete`: a tenant's toolsets, through the same service as
`/v1/toolsets` (built by the composition root on the configured run store, so every gateway sees them).

    planstack toolsets add inventory --mcp-url http://127.0.0.1:8765/mcp
    planstack toolsets add billing --openapi billing.json --base-url http://127.0.0.1:8766 \\
        --auth bearer --secret-env BILLING_TOKEN
    planstack toolsets list | show billing | refresh inventory | delete billing     [--tenant T]

A secret is never an argument (argv is visible to every local user): it comes from an environment
variable (`--secret-env`), a file (`--secret-file`) or a hidden prompt (`--ask-secret`).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError

from contract.errors import PlanstackBaseError
from serving.cli.common import settings_of
from serving.stack import build_stack
from serving.toolsets.protocol import ToolsetCreate, toolset_view
from serving.toolsets.service import ToolsetService

app = typer.Typer(
    help="Your own tools: MCP servers and OpenAPI services a tenant's runs can use.", no_args_is_help=True
)
T = TypeVar("T")
Tenant = Annotated[str, typer.Option("--tenant", help="Tenant owning the toolsets.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _with_toolsets(ctx: typer.Context, work: Callable[[ToolsetService], Awaitable[T]]) -> T:
    async def go() -> T:
        async with build_stack(settings_of(ctx)) as stack:
            assert stack.toolsets is not None
            return await work(stack.toolsets)

    try:
        return asyncio.run(go())
    except PlanstackBaseError as exc:
        _fail(exc.explained, 1)


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def _secret(env: str | None, file: Path | None, ask: bool) -> str | None:
    if sum(x is not None and x is not False for x in (env, file, ask or None)) > 1:
        _fail("give the secret one way: --secret-env, --secret-file or --ask-secret")
    if env is not None:
        value = os.environ.get(env)
        if not value:
            _fail(f"the environment variable {env} is not set")
        return value
    if file is not None:
        return file.read_text(encoding="utf-8").strip()
    if ask:
        return str(typer.prompt("secret", hide_input=True))
    return None


@app.command("add")
def add_command(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Unique per tenant: a-z, 0-9, '_', '-'.")],
    mcp_url: Annotated[str | None, typer.Option("--mcp-url", help="An MCP server's streamable-HTTP URL.")] = None,
    stdio_server: Annotated[
        str | None, typer.Option("--stdio-server", help="An operator-configured stdio server.")
    ] = None,
    openapi: Annotated[Path | None, typer.Option("--openapi", help="An OpenAPI 3.0/3.1 document (JSON/YAML).")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Where the OpenAPI operations live.")] = None,
    auth: Annotated[str, typer.Option("--auth", help="none, bearer, api_key_header or basic.")] = "none",
    header: Annotated[str | None, typer.Option("--header", help="The header of an api_key_header key.")] = None,
    username: Annotated[str | None, typer.Option("--username", help="The user of basic auth.")] = None,
    secret_env: Annotated[str | None, typer.Option("--secret-env", help="Read the secret from this variable.")] = None,
    secret_file: Annotated[Path | None, typer.Option("--secret-file", help="Read the secret from this file.")] = None,
    ask_secret: Annotated[bool, typer.Option("--ask-secret", help="Prompt for the secret (hidden).")] = False,
    require_approval: Annotated[
        list[str] | None, typer.Option("--require-approval", help="A tool whose calls need approval ('*': all).")
    ] = None,
    timeout_s: Annotated[float | None, typer.Option("--timeout", help="One call's timeout in seconds.")] = None,
    tenant: Tenant = "default",
    as_json: AsJson = False,
) -> None:
    """Register a toolset: its tools are listed (MCP) or imported (OpenAPI) and checked now."""
    kind = "openapi" if openapi is not None else "mcp"
    body: dict[str, Any] = {"name": name, "kind": kind, "url": mcp_url, "server": stdio_server, "base_url": base_url}
    if openapi is not None:
        try:
            body["document"] = openapi.read_text(encoding="utf-8")
        except OSError as exc:
            _fail(f"cannot read {openapi}: {exc}")
    secret = _secret(secret_env, secret_file, ask_secret)
    if auth != "none" or secret is not None:
        body["auth"] = {"kind": auth, "header": header, "username": username, "secret": secret}
    body["require_approval"] = require_approval or []
    body["timeout_s"] = timeout_s
    try:
        request = ToolsetCreate.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        _fail(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}")
    record = _with_toolsets(ctx, lambda service: service.add(tenant, request))
    _show(toolset_view(record), as_json)


@app.command("list")
def list_command(ctx: typer.Context, tenant: Tenant = "default", as_json: AsJson = False) -> None:
    """The tenant's toolsets."""
    records = _with_toolsets(ctx, lambda service: service.list_toolsets(tenant))
    views = [toolset_view(record) for record in records]
    if as_json:
        typer.echo(json.dumps(views, indent=2))
        return
    for view in views:
        where = view.get("url") or view.get("server") or view.get("base_url")
        typer.echo(f"{view['name']:<20} {view['kind']:<8} {view['tool_count']:>3} tools  r{view['revision']}  {where}")


@app.command("show")
def show_command(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Name or id.")],
    tenant: Tenant = "default",
    as_json: AsJson = False,
) -> None:
    """One toolset with its tools (never its secret)."""
    record = _with_toolsets(ctx, lambda service: service.get(tenant, key))
    _show(toolset_view(record, definitions=as_json), as_json)


@app.command("refresh")
def refresh_command(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Name or id.")],
    tenant: Tenant = "default",
    as_json: AsJson = False,
) -> None:
    """List the tools again now."""
    record = _with_toolsets(ctx, lambda service: service.refresh(tenant, key))
    _show(toolset_view(record), as_json)


@app.command("delete")
def delete_command(
    ctx: typer.Context, key: Annotated[str, typer.Argument(help="Name or id.")], tenant: Tenant = "default"
) -> None:
    """Delete it (runs that recorded its tools fail their calls of it from then on)."""
    record = _with_toolsets(ctx, lambda service: service.delete(tenant, key))
    typer.echo(f"deleted {record.name} ({record.toolset_id})")


def _show(view: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(view, indent=2))
        return
    where = view.get("url") or view.get("server") or view.get("base_url")
    typer.echo(f"{view['name']} ({view['id']}) · {view['kind']} · {where} · auth {view['auth']['kind']}"
               f"{' (secret set)' if view['auth'].get('secret') else ''} · revision {view['revision']}")  # fmt: skip
    for tool in view["tools"]:
        flags = [
            flag
            for flag, on in (("approval", tool.get("approval") == "required"), ("retried", tool.get("retryable")))
            if on
        ]
        http = f" [{tool['http']}]" if tool.get("http") else ""
        marks = f" ({', '.join(flags)})" if flags else ""
        typer.echo(f"  {tool['name']}{http}{marks}: {str(tool.get('description') or '')[:90]}")

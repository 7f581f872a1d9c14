"""`planstack demos import|export|list|delete`: a tenant's demonstration memory from the command line.

The same service as `/v1/demonstrations` (serving/demonstrations.py), built by the composition root
over the configured home: an import is validated like any plan before anything is stored, and the
gateway sees the change on its next search (it reloads a memory another process saved).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from contract.errors import PlanstackBaseError
from serving.cli.common import fail, settings_of
from serving.demonstrations import DemonstrationService
from serving.stack import build_stack

app = typer.Typer(name="demos", help="A tenant's demonstration memory: import, export, list, delete.")
T = TypeVar("T")
TenantOption = Annotated[str, typer.Option("--tenant", help="The tenant whose memory this is.")]


def _with_service(ctx: typer.Context, work: Callable[[DemonstrationService], Awaitable[T]]) -> T:
    """Run `work` on the stack's demonstration service; typed errors print their fix and exit 1."""
    stack = build_stack(settings_of(ctx))

    async def run() -> T:
        async with contextlib.aclosing(stack):  # no run store needed: the stack is not started
            return await work(stack.demonstrations)

    try:
        return asyncio.run(run())
    except PlanstackBaseError as exc:
        raise fail(exc) from exc


@app.command("import")
def import_command(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSON lines {request, plan, tools?}; '-' reads standard input.")],
    tenant: TenantOption,
    tools: Annotated[
        Path | None, typer.Option("--tools", help="OpenAI-format tools JSON the lines are checked against.")
    ] = None,
) -> None:
    """Validate every line like a plan, then add them all to the tenant's memory (one bad line: none)."""
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
        catalog = json.loads(tools.read_text(encoding="utf-8")) if tools else None
    except (OSError, ValueError) as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from exc
    result = _with_service(ctx, lambda service: service.import_jsonl(tenant, text, tools=catalog))
    evicted = f", {len(result['evicted'])} evicted to stay inside the bounds" if result["evicted"] else ""
    typer.echo(f"{result['added']} added, {result['updated']} updated, {result['duplicates']} duplicates{evicted}")


@app.command("export")
def export_command(
    ctx: typer.Context,
    tenant: TenantOption,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
) -> None:
    """Every demonstration of the tenant as JSON lines (`demos import` reads them back)."""
    text = _with_service(ctx, lambda service: service.export_jsonl(tenant))
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {text.count(chr(10))} demonstrations to {output}", err=True)


@app.command("list")
def list_command(
    ctx: typer.Context,
    tenant: TenantOption,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500)] = 100,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the API's JSON answer.")] = False,
) -> None:
    """The tenant's demonstrations, oldest first, with how often each was retrieved."""
    page: dict[str, Any] = _with_service(ctx, lambda service: service.listing(tenant, limit=limit, offset=offset))
    if as_json:
        typer.echo(json.dumps(page, indent=2, ensure_ascii=False))
        return
    usage = page["usage"]
    table = Table(title=f"{tenant}: {usage['count']}/{usage['max_count']} demonstrations, {usage['bytes']} bytes")
    for column in ("id", "origin", "uses", "created", "request"):
        table.add_column(column)
    for demo in page["data"]:
        created = datetime.fromtimestamp(demo["created_at"], UTC).strftime("%Y-%m-%d %H:%M")
        table.add_row(demo["id"], demo["origin"], str(demo["uses"]), created, escape(demo["request"][:80]))
    Console().print(table)


@app.command("delete")
def delete_command(
    ctx: typer.Context,
    demo_id: Annotated[str, typer.Argument(help="The demonstration id (demo_…).")],
    tenant: TenantOption,
) -> None:
    """Remove one demonstration from the tenant's memory."""
    _with_service(ctx, lambda service: service.delete(tenant, demo_id))
    typer.echo(f"deleted {demo_id}")

"""`planstack run`: execute a plan (or resume a run) with live progress and a summary table;
`planstack runs purge`: apply the run store's retention now.

    planstack run --plan plan.json            # run a plan file ({"nodes": [...]} or a bare list)
    planstack run --resume run_0123abcd        # continue an interrupted run
    planstack run "a family trip to Hangzhou"  # plan with the engine, then run
    planstack run --plan p.json --toolsets inventory --toolsets billing --tenant acme   # the tenant's toolsets
    planstack runs purge                       # retention: delete old runs now

The run service, its store (`runs.store_url` from the settings, or --store) and the registry with
the knowledge base come from the composition root, exactly as the gateway's.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from contract.errors import PlanstackBaseError
from contract.plan import Plan
from executors.runs import RunView
from executors.stores import RunBusy, RunEvent, RunStoreError
from executors.upkeep import purge
from planner.results import InvalidPlanningRequest
from planner.service import PlanningFailed
from serving.cli.common import settings_of
from serving.cli.plan import engine_hint, plan_with
from serving.settings import Settings
from serving.stack import Stack, build_stack, run_store_for

_MARKS = {
    "node_started": ("▶", "cyan"),
    "node_retrying": ("↻", "yellow"),
    "node_finished": ("✓", "green"),
    "node_failed": ("✗", "red"),
    "node_skipped": ("–", "dim"),
    "replan": ("⟳", "magenta"),
    "awaiting_approval": ("⏸", "yellow"),
    "tool_call_required": ("⏸", "yellow"),
    "escalated": ("⚑", "red"),
}


class _CliError(PlanstackBaseError):
    """A problem with the command's own input (a plan file, a run id); exit status 2."""


StoreOption = Annotated[
    str | None, typer.Option("--store", help="Run store: a SQLite file or URL; default: the configured runs.store_url.")
]
runs_app = typer.Typer(help="Maintain the run store.", no_args_is_help=True)


def run_command(
    ctx: typer.Context,
    request: Annotated[str | None, typer.Argument(help="Request text (planned with the engine).")] = None,
    plan: Annotated[Path | None, typer.Option("--plan", help="Plan JSON file to run.")] = None,
    resume: Annotated[str | None, typer.Option("--resume", help="Id of an interrupted run.")] = None,
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant owning the run.")] = "default",
    toolsets: Annotated[
        list[str] | None,
        typer.Option(
            "--toolsets", help="Plan and run over this toolset of the tenant (repeat; builtin, llm, ask_user too)."
        ),
    ] = None,
    store: StoreOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the final run as JSON only.")] = False,
) -> None:
    """Execute a plan, resume a run, or plan-and-run a request; shows progress per node."""
    console = Console(stderr=json_output)
    if sum(x is not None for x in (request, plan, resume)) != 1:
        _fail(console, "give exactly one of: a request text, --plan FILE, --resume RUN_ID")
    settings = settings_of(ctx)
    try:
        view, location = asyncio.run(
            _execute(
                settings,
                request=request,
                plan_file=plan,
                resume=resume,
                tenant=tenant,
                toolsets=toolsets,
                store_url=store,
                console=None if json_output else console,
            )
        )
    except _CliError as exc:
        _fail(console, str(exc))
    except RunBusy as exc:
        _fail(console, f"{exc.message}; another process is executing it ({exc.owner}), so it was left alone")
    except (RunStoreError, InvalidPlanningRequest, ValueError) as exc:  # bad store or URL, unplannable request
        _fail(console, str(exc))
    except PlanningFailed as exc:
        _fail(console, f"planning failed: {exc.reason}", code=1)
    except PlanstackBaseError as exc:
        _fail(console, exc.explained, code=1)
    if json_output:
        typer.echo(view.model_dump_json(indent=2))
    else:
        console.print(summary_table(view))
        if view.error:
            console.print(f"[red]run {view.status}:[/] {view.error.get('error')} ({view.error.get('type')})")
        console.print(f"run [bold]{view.run_id}[/] {view.status} · store {location}")
    raise typer.Exit({"succeeded": 0, "awaiting_approval": 3, "requires_action": 3}.get(view.status, 1))


@runs_app.command("purge")
def purge_command(ctx: typer.Context, store: StoreOption = None) -> None:
    """Apply retention now: old finished runs, then the oldest past the size cap, expired cache entries."""
    console = Console(stderr=True)

    async def purge_now() -> tuple[dict[str, int], str]:
        async with run_store_for(settings_of(ctx), url=store) as opened:
            return (await purge(opened)).as_dict(), opened.display_url

    try:
        report, location = asyncio.run(purge_now())
    except (RunStoreError, ValueError) as exc:
        _fail(console, str(exc))
    typer.echo(json.dumps({"store": location, **report}))


def _fail(console: Console, message: str, code: int = 2) -> NoReturn:
    console.print(f"[red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def load_plan(path: Path) -> Plan:
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise _CliError(f"cannot read plan {path}: {exc}") from None
    if isinstance(raw, list):
        raw = {"nodes": raw}
    try:
        return Plan.model_validate(raw)
    except ValidationError as exc:
        raise _CliError(f"invalid plan {path}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None


async def _plan_for_run(stack: Stack, request: str, tenant: str, tools: list[dict[str, Any]] | None) -> Plan:
    try:
        result = await plan_with(stack, request, tenant, tools)
    except PlanstackBaseError as exc:
        engine_hint(exc, stack)
        raise
    typer.echo(f"planned via {result.path} in {result.timings.get('total_s', 0):.1f} s", err=True)
    if result.plan is None:
        raise _CliError(f"no plan: {result.reason}")
    return result.plan


async def _execute(
    settings: Settings,
    *,
    request: str | None,
    plan_file: Path | None,
    resume: str | None,
    tenant: str,
    store_url: str | None,
    console: Console | None,
    toolsets: list[str] | None = None,
) -> tuple[RunView, str]:
    """The finished run, and where its store is."""
    async with build_stack(settings, run_store_url=store_url) as stack:
        service = stack.run_service()
        if resume is not None:
            if await service.get(tenant, resume) is None:
                raise _CliError(f"run {resume!r} not found for tenant {tenant!r}")
            run_id = await service.resume(tenant, resume)
        else:
            own = None if not toolsets or stack.run_tools is None else await stack.run_tools.resolve(tenant, toolsets)
            if plan_file is not None:
                plan, text = load_plan(plan_file), f"plan file {plan_file.name}"
            else:
                text = request or ""
                plan = await _plan_for_run(stack, text, tenant, None if own is None else own.catalog)
            run_id = await service.start(tenant, text, plan, tools=None if own is None else own.recorded())
        if console is not None:
            console.print(f"run page: {settings.ui_url}#/runs/{run_id}  (the gateway's web UI, tenant {tenant!r})")
        async for event in service.events(tenant, run_id):
            if console is not None:
                print_event(console, event)
            if event.type in ("awaiting_approval", "tool_call_required"):  # a person or the app answers: stop here
                break
        return await service.wait(tenant, run_id), service.store.display_url


def print_event(console: Console, event: RunEvent) -> None:
    if event.type == "run_started":
        console.print(f"[bold]run {event.run_id}[/] {'resumed' if event.data.get('resumed') else 'started'}")
        return
    if event.type not in _MARKS:
        return
    mark, colour = _MARKS[event.type]
    data = event.data
    if event.type == "awaiting_approval":
        console.print(f"[{colour}]{mark} waiting for approval[/] ({data.get('kind')}, round {event.round})")
        return
    if event.type == "tool_call_required":
        what = data.get("question") or data.get("tool")
        console.print(f"[{colour}]{mark} {event.node_id} waits for an answer[/] ({what}): see POST …/tool_outputs")
        return
    if event.type == "escalated":
        console.print(f"[{colour}]{mark} escalated[/] ({data.get('reason')}): see GET /v1/escalations")
        return
    if event.type == "replan":
        console.print(
            f"[{colour}]{mark} re-plan #{data.get('replans')}[/] → round {event.round}, {data.get('nodes')} nodes"
        )
        return
    head = f"[{colour}]{mark}[/] r{event.round} {event.node_id} {data.get('tool', '')}"
    if event.type == "node_started":
        console.print(head)
    elif event.type == "node_retrying":
        error = data.get("error") or {}
        console.print(
            f"{head} attempt {data.get('attempt')} failed ({error.get('type')}), retry in {data.get('delay_s')} s"
        )
    else:
        took = "" if data.get("duration_ms") is None else f" {data['duration_ms']:.0f} ms"
        console.print(f"{head}{took} · {data.get('summary', '')}", overflow="ellipsis", no_wrap=True)


def summary_table(view: RunView) -> Table:
    table = Table(title=f"run {view.run_id} · {view.status} · round {view.round} · {view.replans} re-plans")
    for column in ("node", "tool", "status", "attempts", "duration", "summary"):
        table.add_column(column, overflow="fold" if column == "summary" else "ellipsis")
    colours = {"succeeded": "green", "failed": "red", "skipped": "dim"}
    for node in view.current_nodes():
        duration = "" if node.duration_ms is None else f"{node.duration_ms:.0f} ms"
        status = node.status + (" (reused)" if node.reused_from else "")
        table.add_row(
            node.node_id,
            node.tool,
            f"[{colours[node.status]}]{status}[/]",
            str(node.attempts),
            duration,
            node.summary[:80],
        )
    return table

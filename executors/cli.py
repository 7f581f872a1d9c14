"""`planstack run`: execute a plan (or resume a run) with live progress and a summary table.

    planstack run --plan plan.json            # run a plan file ({"nodes": [...]} or a bare list)
    planstack run --resume run_0123abcd        # continue an interrupted run
    planstack runs purge                       # retention: delete old runs now
    planstack run "a family trip to Hangzhou"  # needs a plan factory (the planner), see build_app

The gateway's CLI mounts `app` (or `build_app(plan_factory=...)` once the planner is wired).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from executors.config import ExecutorConfig
from executors.registry import ToolRegistry
from executors.runs import RunService, RunView
from executors.scheduler import DagScheduler
from executors.stores import RunBusy, RunEvent, RunsConfig, RunStore, RunStoreError, default_store_url, open_run_store
from executors.tools import default_registry
from executors.upkeep import purge
from planner.plan import Plan

PlanFactory = Callable[[str], Awaitable[Plan]]
"""request text → plan (the planner), injected by the gateway."""

_MARKS = {
    "node_started": ("▶", "cyan"),
    "node_retrying": ("↻", "yellow"),
    "node_finished": ("✓", "green"),
    "node_failed": ("✗", "red"),
    "node_skipped": ("–", "dim"),
    "replan": ("⟳", "magenta"),
}


def default_store() -> str:
    """`PLANSTACK_RUNS__STORE_URL`, else the SQLite file in `PLANSTACK_HOME`."""
    home = Path(os.environ.get("PLANSTACK_HOME", Path.home() / ".cache" / "planstack"))
    return os.environ.get("PLANSTACK_RUNS__STORE_URL") or default_store_url(home)


def build_app(
    plan_factory: PlanFactory | None = None,
    registry_factory: Callable[[], ToolRegistry] = default_registry,
    config: ExecutorConfig | None = None,
    runs_config: RunsConfig | None = None,
) -> typer.Typer:
    """The Typer app with the `run` and `runs purge` commands; hooks are injected here, not read from globals."""
    app = typer.Typer(help="Run plans with the executors.", no_args_is_help=True, add_completion=False)
    runs_app = typer.Typer(help="Maintain the run store.", no_args_is_help=True)
    app.add_typer(runs_app, name="runs")

    @app.command("run")
    def run_command(
        request: Annotated[str | None, typer.Argument(help="Request text (needs the planner).")] = None,
        plan: Annotated[Path | None, typer.Option("--plan", help="Plan JSON file to run.")] = None,
        resume: Annotated[str | None, typer.Option("--resume", help="Id of an interrupted run.")] = None,
        tenant: Annotated[str, typer.Option("--tenant", help="Tenant owning the run.")] = "default",
        store: Annotated[str | None, typer.Option("--store", help="Run store: a SQLite file or URL.")] = None,
        json_output: Annotated[bool, typer.Option("--json", help="Print the final run as JSON only.")] = False,
    ) -> None:
        """Execute a plan, resume a run, or plan-and-run a request; shows progress per node."""
        console = Console(stderr=json_output)
        chosen = sum(x is not None for x in (request, plan, resume))
        if chosen != 1:
            _fail(console, "give exactly one of: a request text, --plan FILE, --resume RUN_ID")
        run_store = _open_store(console, store, runs_config)
        try:
            view = asyncio.run(
                _execute(
                    request=request,
                    plan_file=plan,
                    resume=resume,
                    tenant=tenant,
                    store=run_store,
                    registry=registry_factory(),
                    config=config or ExecutorConfig(),
                    plan_factory=plan_factory,
                    console=None if json_output else console,
                )
            )
        except _CliError as exc:
            _fail(console, str(exc))
        except RunBusy as exc:
            _fail(console, f"{exc.message}; another process is executing it ({exc.owner}), so it was left alone")
        except RunStoreError as exc:
            _fail(console, f"{exc.message} ({run_store.display_url})")
        if json_output:
            typer.echo(view.model_dump_json(indent=2))
        else:
            console.print(summary_table(view))
            if view.error:
                console.print(f"[red]run {view.status}:[/] {view.error.get('error')} ({view.error.get('type')})")
            console.print(f"run [bold]{view.run_id}[/] {view.status} · store {run_store.display_url}")
        raise typer.Exit(0 if view.status == "succeeded" else 1)

    @runs_app.command("purge")
    def purge_command(
        store: Annotated[str | None, typer.Option("--store", help="Run store: a SQLite file or URL.")] = None,
    ) -> None:
        """Apply retention now: old finished runs, then the oldest past the size cap, expired cache entries."""
        run_store = _open_store(Console(stderr=True), store, runs_config)
        try:
            report = asyncio.run(_purge(run_store))
        except RunStoreError as exc:
            _fail(Console(stderr=True), f"{exc.message} ({run_store.display_url})")
        typer.echo(json.dumps({"store": run_store.display_url, **report}))

    @app.callback()
    def main() -> None:
        """planstack executors."""

    return app


class _CliError(Exception):
    pass


def _fail(console: Console, message: str) -> NoReturn:
    console.print(f"[red]error:[/] {message}")
    raise typer.Exit(2)


def _open_store(console: Console, store: str | None, config: RunsConfig | None) -> RunStore:
    try:
        return open_run_store(store or (config and config.store_url) or default_store(), config=config)
    except (ValueError, RunStoreError) as exc:
        _fail(console, str(exc))


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


async def _execute(
    *,
    request: str | None,
    plan_file: Path | None,
    resume: str | None,
    tenant: str,
    store: RunStore,
    registry: ToolRegistry,
    config: ExecutorConfig,
    plan_factory: PlanFactory | None,
    console: Console | None,
) -> RunView:
    service = RunService(store, DagScheduler(registry, config))
    try:
        if resume is not None:
            if await service.get(tenant, resume) is None:
                raise _CliError(f"run {resume!r} not found for tenant {tenant!r}")
            run_id = await service.resume(tenant, resume)
        else:
            if plan_file is not None:
                plan, text = load_plan(plan_file), f"plan file {plan_file.name}"
            else:
                if plan_factory is None:
                    raise _CliError("planning a request needs the planner, which is not wired yet; use --plan FILE")
                text = request or ""
                plan = await plan_factory(text)
            run_id = await service.start(tenant, text, plan)
        async for event in service.events(tenant, run_id):
            if console is not None:
                print_event(console, event)
        return await service.wait(tenant, run_id)
    finally:
        await service.aclose()
        await store.aclose()


async def _purge(store: RunStore) -> dict[str, int]:
    try:
        return (await purge(store)).as_dict()
    finally:
        await store.aclose()


def print_event(console: Console, event: RunEvent) -> None:
    if event.type == "run_started":
        console.print(f"[bold]run {event.run_id}[/] {'resumed' if event.data.get('resumed') else 'started'}")
        return
    if event.type not in _MARKS:
        return
    mark, colour = _MARKS[event.type]
    data = event.data
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


app = build_app()

"""`planstack`: the one command line, one module per command group.

    planstack serve | engine … | model prepare | config show     serving/cli/gateway.py
    planstack plan "…"                                            serving/cli/plan.py
    planstack run "…" | --plan FILE | --resume RUN_ID             serving/cli/run.py
    planstack runs purge                                          serving/cli/run.py
    planstack index build|query|list|info|delete-doc              serving/cli/index.py
    planstack demos import|export|list|delete                     serving/cli/demos.py
    planstack toolsets add|list|show|refresh|delete               serving/cli/toolsets.py
    planstack bench latency|accuracy|compare                      a plugin: benchmarks/harness/cli.py

The root callback loads the settings once into the context; every command builds what it needs
through the composition root (`serving.stack.build_stack`), as the gateway does.

Command groups of other distributions plug in through the entry-point group `planstack.cli` (the
benchmark harness registers `bench` there in pyproject.toml). A plugin is imported only when its
command is the one invoked, so `planstack serve` never loads the benchmark harness.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

import typer

from serving.cli import demos, gateway, index, plan, run, toolsets
from serving.settings import load_settings

app = typer.Typer(help="planstack: a self-hosted planner/executor stack on vLLM.", no_args_is_help=True)
gateway.register(app)
app.command("plan")(plan.plan_command)
app.command("run")(run.run_command)
app.add_typer(run.runs_app, name="runs")
app.add_typer(index.app, name="index")
app.add_typer(demos.app, name="demos")
app.add_typer(toolsets.app, name="toolsets")


@app.callback()
def _root(ctx: typer.Context) -> None:
    """Load the settings once; the commands read them from the context."""
    ctx.obj = load_settings()


PLUGIN_GROUP = "planstack.cli"


def register_plugins(argv: Sequence[str]) -> None:
    """Add the plugin command groups: the one `argv` invokes, loaded; the others as a placeholder that
    only names them in `--help` (nothing is imported for them)."""
    invoked = argv[0] if argv else None
    for point in entry_points(group=PLUGIN_GROUP):
        if any(group.name == point.name for group in app.registered_groups):
            continue
        if point.name == invoked:
            app.add_typer(point.load(), name=point.name)
        else:
            app.command(point.name, help=f"(plugin {point.value}: see `planstack {point.name} --help`)")(_unloaded)


def _unloaded() -> None:
    raise typer.Exit(2)


def main() -> None:
    register_plugins(sys.argv[1:])
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


__all__ = ["PLUGIN_GROUP", "app", "main", "register_plugins"]

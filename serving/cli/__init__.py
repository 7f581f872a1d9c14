"""`planstack`: the one command line, one module per command group.

    planstack serve | engine … | model prepare | config show     serving/cli/gateway.py
    planstack plan "…"                                            serving/cli/plan.py
    planstack run "…" | --plan FILE | --resume RUN_ID             serving/cli/run.py
    planstack runs purge                                          serving/cli/run.py
    planstack index build|query|list|info|delete-doc              serving/cli/index.py
    planstack demos import|export|list|delete                     serving/cli/demos.py
    planstack bench latency|accuracy|compare                      benchmarks/harness/cli.py

The root callback loads the settings once into the context; every command builds what it needs
through the composition root (`serving.stack.build_stack`), as the gateway does.
"""

from __future__ import annotations

import sys

import typer

from benchmarks.harness.cli import app as bench_app
from serving.cli import demos, gateway, index, plan, run
from serving.settings import load_settings

app = typer.Typer(help="planstack: a self-hosted planner/executor stack on vLLM.", no_args_is_help=True)
gateway.register(app)
app.command("plan")(plan.plan_command)
app.command("run")(run.run_command)
app.add_typer(run.runs_app, name="runs")
app.add_typer(index.app, name="index")
app.add_typer(demos.app, name="demos")
app.add_typer(bench_app, name="bench")


@app.callback()
def _root(ctx: typer.Context) -> None:
    """Load the settings once; the commands read them from the context."""
    ctx.obj = load_settings()


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


__all__ = ["app", "main"]

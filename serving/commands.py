"""`planstack plan` and `planstack run`: the planner and the executors from the command line.

Both use the effective settings (engine URL, planner config, isolation secret) and the same
composition root as the gateway, so a plan made here is the plan the API would make.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer

from executors.cli import build_app as build_run_app
from planner.catalog import CatalogError
from planner.plan import Plan
from planner.render import render_tree
from planner.service import PlanningFailed
from serving.engine.profiles import load_profile
from serving.isolation import CacheSalter, server_secret
from serving.settings import Settings, load_settings
from serving.stack import build_domain


def _salt(settings: Settings, tenant: str) -> str:
    secret = server_secret(settings)
    return CacheSalter(settings.isolation.scope, secret).salt(tenant)


async def plan_request(request: str, tenant: str, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Plan one request against the configured engine; the PlanResult as a dict."""
    settings = load_settings()
    model = load_profile(settings.engine.profile).served_model_name
    timeout = httpx.Timeout(settings.engine.request_timeout_s, connect=settings.engine.connect_timeout_s)
    async with httpx.AsyncClient(timeout=timeout) as http:
        domain = build_domain(settings, engine_model=model, http=http)
        result = await domain.planner.plan(request, tenant=tenant, cache_salt=_salt(settings, tenant), tools=tools)
    return result.as_dict()


def plan_command(
    request: Annotated[str, typer.Argument(help="The request in natural language.")],
    tools: Annotated[
        Path | None, typer.Option("--tools", help="OpenAI-format tools JSON (default: the demo tools).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole result as JSON.")] = False,
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant (plan cache and cache_salt scope).")] = "cli",
) -> None:
    """Plan REQUEST with the running engine; print the plan as a tree and as JSON."""
    try:
        tool_list = json.loads(tools.read_text()) if tools else None
        result = asyncio.run(plan_request(request, tenant, tool_list))
    except (OSError, json.JSONDecodeError, CatalogError, ValueError) as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from exc
    except PlanningFailed as exc:
        typer.secho(f"planning failed: {exc.reason}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from exc
    except httpx.HTTPError as exc:
        typer.secho(f"the engine is not reachable ({exc}); start it with `planstack engine start`", err=True)
        raise typer.Exit(1) from exc
    if as_json:
        typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
        return
    typer.echo(render_tree(Plan.model_validate(result["plan"])))
    typer.echo(json.dumps(result["plan"], ensure_ascii=False))
    reason = f" ({result['fallback_reason']})" if result.get("fallback_reason") else ""
    typer.echo(
        f"path: {result['path']}{reason}  output tokens: {result['usage']['completion_tokens']}  "
        f"time: {result['timings'].get('total_s', 0):.2f} s"
    )


async def _plan_for_run(request: str) -> Plan:
    result = await plan_request(request, tenant="default")
    typer.echo(f"planned via {result['path']} in {result['timings'].get('total_s', 0):.1f} s", err=True)
    return Plan.model_validate(result["plan"])


def register(app: typer.Typer) -> None:
    """Add `plan` and `run` to the main CLI."""
    app.command("plan")(plan_command)
    settings = load_settings()
    run_app = build_run_app(plan_factory=_plan_for_run, config=settings.executors, runs_config=settings.runs)
    app.registered_commands.extend(run_app.registered_commands)
    app.registered_groups.extend(run_app.registered_groups)  # `runs purge`

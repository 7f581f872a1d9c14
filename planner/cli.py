"""`planstack plan "..."`: plan a request against the running engine and print the tree (or JSON)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer

from planner.catalog import CatalogError, ToolCatalog
from planner.config import PlannerConfig
from planner.llm import VLLMChatClient
from planner.plan import Plan
from planner.render import render_tree
from planner.service import PlannerService, PlanningFailed, demo_catalog

app = typer.Typer(help="Planner: request → validated plan (a DAG of tool calls).", no_args_is_help=True)


@app.callback()
def planner_group() -> None:
    """Planner commands."""


@app.command("plan")
def plan_command(
    request: Annotated[str, typer.Argument(help="The request in natural language.")],
    tools: Annotated[
        Path | None, typer.Option("--tools", help="OpenAI-format tools JSON (default: demo catalog).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
    engine_url: Annotated[str, typer.Option("--engine-url", help="vLLM OpenAI server.")] = "http://127.0.0.1:8001",
    model: Annotated[str, typer.Option("--model", help="Served model name.")] = "smollm2-135m-instruct",
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant (cache scope and cache_salt).")] = "cli",
) -> None:
    """Plan REQUEST and print the plan as a tree (and the path that produced it)."""
    try:
        catalog = ToolCatalog.from_openai(json.loads(tools.read_text())) if tools else demo_catalog()
    except (CatalogError, OSError, json.JSONDecodeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    try:
        result = asyncio.run(_plan(request, catalog, engine_url, model, tenant))
    except PlanningFailed as exc:
        typer.echo(f"planning failed: {exc.reason}", err=True)
        raise typer.Exit(1) from exc
    if as_json:
        typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
        return
    typer.echo(render_tree(Plan.model_validate(result["plan"])))
    typer.echo(
        f"\npath: {result['path']}  tokens: {result['usage']['completion_tokens']}  "
        f"time: {result['timings'].get('total_s', 0):.2f} s"
    )


async def _plan(request: str, catalog: ToolCatalog, engine_url: str, model: str, tenant: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        llm = VLLMChatClient(engine_url, model, http)
        service = PlannerService.from_config(PlannerConfig(), llm=llm, catalog=catalog)
        result = await service.plan(request, tenant=tenant, cache_salt=f"cli-{tenant}")
        return result.as_dict()

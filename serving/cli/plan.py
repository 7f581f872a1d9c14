"""`planstack plan`: the planner from the command line, built by the same root as the gateway's,
so a plan made here is the plan the API would make (same engine client, salts, catalog)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from contract.errors import PlanstackBaseError
from contract.plan import Plan
from planner.catalog import CatalogError
from planner.llm import LLMBusy, LLMUnavailable
from planner.render import render_tree
from planner.results import InvalidPlanningRequest
from planner.service import PlanningFailed, PlanResult
from serving.cli.common import fail, settings_of
from serving.stack import Stack, build_stack


async def plan_with(stack: Stack, request: str, tenant: str, tools: list[dict[str, Any]] | None = None) -> PlanResult:
    """Plan one request for `tenant` with the stack's planner, salted and slotted like the gateway's."""
    async with stack.engine.slots.admitted(tenant):
        return await stack.planner.plan(request, tenant=tenant, cache_salt=stack.salter.salt(tenant), tools=tools)


def engine_hint(exc: PlanstackBaseError, stack: Stack) -> PlanstackBaseError:
    """The engine being down is the one failure with an obvious fix on this machine."""
    if isinstance(exc, LLMUnavailable) and not isinstance(exc, LLMBusy):
        exc.hint = f"is the engine at {stack.settings.engine.base_url} running? start it with `planstack engine start`"
    return exc


def plan_command(
    ctx: typer.Context,
    request: Annotated[str, typer.Argument(help="The request in natural language.")],
    tools: Annotated[
        Path | None, typer.Option("--tools", help="OpenAI-format tools JSON (default: the demo tools).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole result as JSON.")] = False,
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant (plan cache and cache_salt scope).")] = "cli",
) -> None:
    """Plan REQUEST with the running engine; print the plan as a tree and as JSON."""
    stack = build_stack(settings_of(ctx))

    async def plan_and_close(tool_list: list[dict[str, Any]] | None) -> dict[str, Any]:
        async with contextlib.aclosing(stack):  # planning needs no run store: the stack is not started
            return (await plan_with(stack, request, tenant, tool_list)).as_dict()

    try:
        tool_list = json.loads(tools.read_text()) if tools else None
        result = asyncio.run(plan_and_close(tool_list))
    except (OSError, json.JSONDecodeError, CatalogError, InvalidPlanningRequest, ValueError) as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from exc
    except PlanningFailed as exc:
        typer.secho(f"planning failed: {exc.reason}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from exc
    except PlanstackBaseError as exc:
        raise fail(engine_hint(exc, stack)) from exc
    if as_json:
        typer.echo(json.dumps(result, indent=2, ensure_ascii=False))
        return
    if result["plan"] is None:  # a valid answer: nothing in the catalog fits the request
        typer.echo(f"no plan: {result.get('reason')}")
        return
    typer.echo(render_tree(Plan.model_validate(result["plan"])))
    typer.echo(json.dumps(result["plan"], ensure_ascii=False))
    reason = f" ({result['fallback_reason']})" if result.get("fallback_reason") else ""
    typer.echo(
        f"path: {result['path']}{reason}  output tokens: {result['usage']['completion_tokens']}  "
        f"time: {result['timings'].get('total_s', 0):.2f} s"
    )

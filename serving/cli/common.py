"""What every command shares: the settings from the context, logging, and errors as exit codes."""

from __future__ import annotations

import logging

import typer

from contract.errors import PlanstackBaseError
from serving.settings import Settings, load_settings


def settings_of(ctx: typer.Context) -> Settings:
    """The settings the root callback loaded (a command invoked on its own loads them itself)."""
    found = ctx.find_object(Settings)
    return found if found is not None else load_settings()


def setup_logging(settings: Settings, verbose: bool = False) -> None:
    level = logging.DEBUG if verbose else getattr(logging, settings.log_level.upper())
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)


def fail(exc: PlanstackBaseError, code: int = 1) -> typer.Exit:
    """Print a typed error with its fix; the exit to raise."""
    message = exc.message if exc.hint is None else f"{exc.message}\n  fix: {exc.hint}"
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=code)

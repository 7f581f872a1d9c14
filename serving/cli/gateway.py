"""`planstack serve`, `engine start|stop|status`, `model prepare`, `config show`."""

from __future__ import annotations

import json
import signal
from types import FrameType

import typer

from serving.auth import ApiKeyAuth
from serving.cli.common import fail, settings_of, setup_logging
from serving.engine.model_prep import prepare_model
from serving.engine.process import EngineProcess, pid_alive, port_in_use, read_state
from serving.engine.profiles import EngineProfile, load_profile
from serving.errors import PlanstackError
from serving.isolation import server_secret
from serving.settings import Settings

engine_app = typer.Typer(help="Manage the vLLM engine process.", no_args_is_help=True)
model_app = typer.Typer(help="Prepare model weights.", no_args_is_help=True)
config_app = typer.Typer(help="Inspect the configuration.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.add_typer(engine_app, name="engine")
    app.add_typer(model_app, name="model")
    app.add_typer(config_app, name="config")


def _setup(ctx: typer.Context) -> tuple[Settings, EngineProfile]:
    settings = settings_of(ctx)
    setup_logging(settings)
    return settings, load_profile(settings.engine.profile)


def _progress(elapsed: float, last_line: str) -> None:
    typer.echo(f"  … waiting for the engine ({elapsed:.0f} s): {last_line[:100]}", err=True)


@model_app.command("prepare")
def model_prepare(ctx: typer.Context) -> None:
    """Convert/verify the profile's weights folder (idempotent; fast when already prepared)."""
    settings, profile = _setup(ctx)
    try:
        prepared = prepare_model(profile, settings)
    except PlanstackError as exc:
        raise fail(exc) from exc
    verb = "converted" if prepared.converted else "verified"
    typer.echo(f"model {profile.served_model_name}: {verb} {prepared.path} in {prepared.seconds:.1f} s")


@engine_app.command("start")
def engine_start(ctx: typer.Context) -> None:
    """Start the engine in the background and wait until it is healthy."""
    settings, profile = _setup(ctx)
    try:
        prepared = prepare_model(profile, settings)
        engine = EngineProcess(settings, profile, prepared.path)
        engine.start(detach=True)
        typer.echo(f"engine starting (pid file {engine.state_file}, log {engine.log_file})")
        waited = engine.wait_healthy(settings.engine.startup_timeout_s, _progress)
    except PlanstackError as exc:
        raise fail(exc) from exc
    typer.echo(f"engine ready at {engine.base_url} (model {profile.served_model_name}) after {waited:.0f} s")


@engine_app.command("stop")
def engine_stop(ctx: typer.Context) -> None:
    """Stop the engine started by `engine start`."""
    settings, profile = _setup(ctx)
    engine = EngineProcess(settings, profile, profile.model_dir(settings))
    typer.echo("engine stopped" if engine.stop() else "no engine was running")


@engine_app.command("status")
def engine_status(ctx: typer.Context) -> None:
    """Show whether the engine runs and answers."""
    settings, profile = _setup(ctx)
    engine = EngineProcess(settings, profile, profile.model_dir(settings))
    state = read_state(engine.state_file)
    alive = state is not None and pid_alive(state.pid)
    listening = port_in_use(settings.engine.host, settings.engine.port)
    report = {
        "url": engine.base_url,
        "profile": profile.name,
        "model": profile.served_model_name,
        "pid": state.pid if state else None,
        "process": "running" if alive else "not running",
        "port": "listening" if listening else "closed",
        "log": str(engine.log_file),
    }
    typer.echo(json.dumps(report, indent=2))
    if not listening:
        raise typer.Exit(code=3)


@config_app.command("show")
def config_show(ctx: typer.Context) -> None:
    """Print the effective configuration (YAML + environment), secrets masked."""
    settings, profile = _setup(ctx)
    typer.echo(json.dumps({"settings": settings.masked(), "profile": profile.model_dump(mode="json")}, indent=2))


def serve(
    ctx: typer.Context,
    external_engine: bool = typer.Option(
        False, help="Use an engine that is already running at engine.host:engine.port instead of starting one."
    ),
) -> None:
    """Prepare the model, start the engine and the gateway; Ctrl-C stops both."""
    import uvicorn

    from serving.app import create_app
    from serving.stack import build_stack

    settings, profile = _setup(ctx)
    engine: EngineProcess | None = None
    try:
        ApiKeyAuth.from_settings(settings)  # a public bind without real keys fails here, before the engine starts
        server_secret(settings)  # so does a secret file open to others, or empty
        prepared = prepare_model(profile, settings)
        if external_engine or port_in_use(settings.engine.host, settings.engine.port):
            typer.echo(f"using the engine already listening at {settings.engine.base_url}")
        else:
            engine = EngineProcess(settings, profile, prepared.path)
            engine.start(detach=False)
            typer.echo(f"starting the engine ({profile.served_model_name}); log: {engine.log_file}")
            waited = engine.wait_healthy(settings.engine.startup_timeout_s, _progress)
            typer.echo(f"engine ready after {waited:.0f} s")
    except PlanstackError as exc:
        if engine is not None:
            engine.stop()
        raise fail(exc) from exc

    def _stop(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    gateway = f"http://{settings.gateway.host}:{settings.gateway.port}"
    key_hint = (
        "planstack-dev-key (development only; set PLANSTACK_API_KEYS)"
        if settings.api_keys is None
        else "one of PLANSTACK_API_KEYS"
    )
    typer.echo(
        f"\nplanstack gateway on {gateway}  (engine {settings.engine.base_url}, model {profile.served_model_name})\n"
        f"  curl {gateway}/v1/chat/completions -H 'Authorization: Bearer <key>' "
        f"-H 'Content-Type: application/json' \\\n"
        f"       -d '{{\"model\": \"{profile.served_model_name}\", "
        f"\"messages\": [{{\"role\": \"user\", \"content\": \"Hello\"}}]}}'\n"
        f"  key: {key_hint}\n"
        "  Ctrl-C stops the gateway and the engine.\n"
    )
    try:
        stack = build_stack(settings, engine_model=profile.served_model_name, model_dir=prepared.path)
        uvicorn.run(
            create_app(stack),
            host=settings.gateway.host,
            port=settings.gateway.port,
            log_level=settings.log_level,
            access_log=settings.gateway.access_log,
            timeout_graceful_shutdown=5,
        )
    except KeyboardInterrupt:
        pass
    finally:
        if engine is not None:
            typer.echo("stopping the engine")
            engine.stop()

"""The `pps` command. Each command parses its options, builds Settings, and calls
one engine service. `--data-dir` and `--port` (or PPS_DATA_DIR / PPS_PORT) apply to
every command that uses them."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from engine import entities, queue
from engine.config import Settings
from engine.db import Database, ensure_private_file
from engine.errors import Conflict, InputError, NotFound

app = typer.Typer(
    help="pps — Pattern Persistence Service: one memory for every channel of an AI entity.",
    no_args_is_help=True,
    add_completion=False,
)
entity_app = typer.Typer(help="Create entities and manage their tokens.", no_args_is_help=True)
app.add_typer(entity_app, name="entity")
queue_app = typer.Typer(
    help="The durable job queue: counts by state, dead jobs with their errors, pauses.",
    invoke_without_command=True,
)
app.add_typer(queue_app, name="queue")

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Where data lives [env: PPS_DATA_DIR, default: ./data]."),
]
Port = Annotated[
    int | None, typer.Option("--port", help="Server port [env: PPS_PORT, default: 8000].")
]
EntityOpt = Annotated[str | None, typer.Option("--entity", help="Only this entity.")]
TokenFile = Annotated[
    Path | None, typer.Option("--token-file", help="Also write the token to this file (0600).")
]


def settings_for(**overrides) -> Settings:
    """Settings from the environment and .env, with the given command-line values on top."""
    os.umask(0o077)
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


def fail(message: str) -> None:
    typer.echo(f"pps: {message}", err=True)
    raise typer.Exit(1)


@app.command()
def serve(
    data_dir: DataDir = None,
    port: Port = None,
    host: Annotated[
        str | None,
        typer.Option(help="Address to bind [env: PPS_HOST, default: 127.0.0.1]."),
    ] = None,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote", help="Allow a non-loopback --host (put TLS and a proxy in front)."
        ),
    ] = False,
) -> None:
    """Run the HTTP service (REST under /v1, OpenAPI at /docs)."""
    import uvicorn

    from engine.app import create_app

    settings = settings_for(
        data_dir=data_dir, port=port, host=host, allow_remote=allow_remote or None
    )
    if not settings.binds_loopback and not settings.allow_remote:
        fail(
            f"refusing to listen on {settings.host}: it is not a loopback address. "
            "pps has no TLS of its own; put a TLS proxy in front and pass --allow-remote."
        )
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="info",
        access_log=False,
        timeout_graceful_shutdown=5,
    )


@entity_app.command("create")
def entity_create(name: str, data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Create an entity; print its token (the only line on stdout). Keep it secret."""
    _issue_token(entities.create, name, data_dir, token_file)


@entity_app.command("rotate")
def entity_rotate(name: str, data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Give an entity a new token; the old one stops working at once."""
    _issue_token(entities.rotate, name, data_dir, token_file)


@entity_app.command("list")
def entity_list(data_dir: DataDir = None) -> None:
    """List entities (names and dates; tokens are never shown again)."""
    db = Database.open(settings_for(data_dir=data_dir))
    for entity in entities.list_all(db):
        rotated = f"  rotated {entity.rotated_at}" if entity.rotated_at else ""
        typer.echo(f"{entity.name}  created {entity.created_at}{rotated}")


@queue_app.callback()
def queue_show(ctx: typer.Context, entity: EntityOpt = None, data_dir: DataDir = None) -> None:
    """Show jobs by state, the oldest unfinished job's age, pauses and dead jobs."""
    if ctx.invoked_subcommand is not None:
        return
    state = queue.status(Database.open(settings_for(data_dir=data_dir)), entity)
    typer.echo("jobs  " + "  ".join(f"{name} {n}" for name, n in state.counts.items()))
    age = state.oldest_pending_age_s
    typer.echo(f"oldest unfinished job: {'none' if age is None else f'{age:.1f} s old'}")
    for p in state.paused:
        typer.echo(f"paused  {p.entity} {p.kind} since {p.since}: {p.reason}")
    for job in state.dead:
        typer.echo(
            f"dead  #{job.id} {job.entity} {job.kind} {job.key} after {job.attempts} attempts:"
            f" {job.last_error}"
        )


@queue_app.command("retry")
def queue_retry(
    dead: Annotated[bool, typer.Option("--dead", help="Dead jobs too (attempts reset).")] = False,
    entity: EntityOpt = None,
    data_dir: DataDir = None,
) -> None:
    """Put retrying and waiting jobs (and dead ones, with --dead) back to pending now."""
    n = queue.retry(Database.open(settings_for(data_dir=data_dir)), entity, dead=dead)
    typer.echo(f"{n} jobs put back")


def _issue_token(service, name: str, data_dir: Path | None, token_file: Path | None) -> None:
    db = Database.open(settings_for(data_dir=data_dir))
    try:
        token = service(db, name)
    except (InputError, Conflict, NotFound) as exc:
        fail(str(exc))
    if token_file is not None:
        ensure_private_file(token_file).write_text(token + "\n")
    sys.stdout.write(token + "\n")


def main() -> None:
    app()


if __name__ == "__main__":
    main()

"""`pps queue`: the durable job queue's state, and putting jobs back."""

from __future__ import annotations

from typing import Annotated

import typer

from pps.cli.options import DataDir, EntityOpt, entity_names, settings_for

app = typer.Typer(
    help="The durable job queue: counts by state, dead jobs with their errors, pauses.",
    invoke_without_command=True,
)


@app.callback()
def queue_show(ctx: typer.Context, entity: EntityOpt = None, data_dir: DataDir = None) -> None:
    """Show jobs by state, the oldest unfinished job's age, pauses, what is still being
    made (vectors after a model change) and dead jobs."""
    if ctx.invoked_subcommand is not None:
        return
    from engine.api import Service

    with Service.open(settings_for(data_dir=data_dir)) as service:
        entity_names(service, entity)
        state = service.queue(entity)
    typer.echo("jobs  " + "  ".join(f"{name} {n}" for name, n in state.counts.items()))
    age = state.oldest_pending_age_s
    typer.echo(f"oldest unfinished job: {'none' if age is None else f'{age:.1f} s old'}")
    for p in state.paused:
        typer.echo(f"waiting  {p.entity} {p.kind}: {p.jobs} jobs since {p.since}: {p.reason}")
    for b in state.backlogs:
        typer.echo(f"making  {b.entity} {b.what}{f' ({b.model})' if b.model else ''}: {b.said}")
    for job in state.dead:
        typer.echo(
            f"dead  #{job.id} {job.entity} {job.kind} {job.key} after {job.attempts} attempts:"
            f" {job.last_error}"
        )


@app.command("retry")
def queue_retry(
    dead: Annotated[bool, typer.Option("--dead", help="Dead jobs too (attempts reset).")] = False,
    entity: EntityOpt = None,
    data_dir: DataDir = None,
) -> None:
    """Put retrying and waiting jobs (and dead ones, with --dead) back to pending now."""
    from engine.api import Service

    with Service.open(settings_for(data_dir=data_dir)) as service:
        entity_names(service, entity)
        n = service.retry(entity, dead=dead)
    typer.echo(f"{n} jobs put back")

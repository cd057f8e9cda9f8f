"""`pps export` and `pps import export` (engine/backup/exporting.py and importing.py):
one entity as plain files (JSONL and its home's markdown) and back, into another data dir
or another name. Both work beside a running server: the export reads one consistent
snapshot, and the import stores through capture (SQLite takes turns between processes)
and leaves the turns' context and vectors to the queue, which that server's workers run
at once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from pps.cli.options import DataDir, TokenFile, fail, settings_for


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pps")
    except PackageNotFoundError:
        return "unknown"


def export(
    out: Annotated[
        Path,
        typer.Argument(
            metavar="OUT_DIR",
            help="An empty (or missing) folder, or an earlier export of the same entity.",
        ),
    ],
    entity: Annotated[str, typer.Option("--entity", help="The entity to export.")],
    data_dir: DataDir = None,
) -> None:
    """Write one entity as files a person can read and keep in git: events.jsonl,
    summaries.jsonl, inventory.jsonl, its home's files under home/, and export.json.
    Unchanged data exports to the same bytes; over an earlier export of the same entity,
    only what changed changes."""
    from engine.api.backups import Backups, ExportError

    settings = settings_for(data_dir=data_dir)
    try:
        # From the settings: the export opens the data dir itself, and one that holds no
        # database is refused, not made.
        done = Backups(settings).export(entity, out, version=_version())
    except ExportError as exc:
        fail(str(exc))
    counts = done.manifest["counts"]
    verb = "rewrote" if done.rewritten else "wrote"
    typer.echo(
        f"{verb} {done.folder}: {entity}: {counts['events']} events, {counts['summaries']}"
        f" summaries, {counts['spaces']} spaces, {counts['items']} items,"
        f" {counts['home_files']} home files"
    )
    for skipped in done.manifest["skipped"]:
        typer.echo(f"skipped {skipped}", err=True)
    typer.echo("the graph is not in it: `pps replay graph` rebuilds it after an import")


def import_export(
    folder: Annotated[
        Path, typer.Argument(metavar="EXPORT_DIR", help="A folder written by `pps export`.")
    ],
    entity: Annotated[
        str | None,
        typer.Option("--entity", help="Import under this name [default: the exported one]."),
    ] = None,
    data_dir: DataDir = None,
    token_file: TokenFile = None,
) -> None:
    """Take an export into this data dir: events through capture (an event_uid already
    stored adds nothing), summaries, inventory, home files (one that differs from the file
    there is refused), then the search index. A new entity is created and its token is
    the only line on stdout; the report goes to stderr. Everything is checked first: a bad
    line or a conflicting file is refused with nothing written."""
    from engine.api import Service
    from engine.api.backups import Backups, ExportError
    from pps.cli.entity import deliver_token

    os.umask(0o077)
    settings = settings_for(data_dir=data_dir)
    backups = Backups(settings)  # the export is checked before the data dir is opened
    try:
        plan = backups.plan_import(folder, entity)
    except ExportError as exc:
        fail(str(exc))
    if not plan.exists:
        with Service.open(settings) as service:
            typer.echo(f"created entity {plan.entity!r}; its token (shown once):", err=True)
            entities = service.entities
            deliver_token(
                lambda: entities.create(plan.entity),
                token_file,
                (
                    lambda: entities.forget_undelivered(plan.entity),
                    f"{plan.entity!r} was not created",
                ),
            )
    try:
        done = backups.apply_import(plan)
    except ExportError as exc:
        fail(str(exc))

    def say(text: str) -> None:
        typer.echo(text, err=True)

    say(
        f"imported {folder} into {plan.entity!r} ({settings.data_dir}):"
        f" {done.events_new} events new, {done.events_known} already there;"
        f" {done.summaries_new} summaries new, {done.summaries_known} already there;"
        f" {done.inventory_changed} inventory entries added or updated,"
        f" {done.inventory_known} unchanged; {done.files_copied} home files copied,"
        f" {done.files_known} already there; {done.files_indexed} files indexed"
    )
    for skipped in plan.skipped:
        say(f"skipped {skipped}")
    if done.events_new:
        where = (
            f"{done.server} is doing it now"
            if done.server
            else "the next `pps serve` on this data dir does it"
        )
        say(f"the new turns' context and vectors are queued: {where} (`pps queue` shows it)")
    for note in done.notes:
        say(note)
    say("the graph is not in an export: `pps replay graph` rebuilds it from the events")

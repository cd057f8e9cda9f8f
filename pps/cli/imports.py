"""`pps import`: history from elsewhere (Claude Code transcripts, a Discord daemon's
database, markdown journals, an OpenClaw workspace), sent through the client."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pps.cli.options import Port, Url, fail, settings_for

app = typer.Typer(
    help="Import history: Claude Code transcripts, a Discord daemon's database, markdown "
    "journals, an OpenClaw workspace. Re-runs store nothing twice.",
    no_args_is_help=True,
)

AttachName = Annotated[str | None, typer.Option("--name", help="Its name (default: the folder's).")]


def _import(source: str, url: str | None, port: int | None, work) -> None:
    """Build the client and an Import, run `work(importer, progress)`, print the summary."""
    from rich.console import Console
    from rich.progress import Progress

    from ingest.client import Client, ClientConfigError
    from ingest.importers import Import, Summary

    settings = settings_for(url=url, port=port)
    try:
        client = Client.from_settings(settings)
    except ClientConfigError as exc:
        fail(str(exc))
    with client, Progress(console=Console(stderr=True), transient=True) as progress:
        importer = Import(client, Summary(source), max_content_bytes=settings.max_content_bytes)
        summary = work(importer, progress)
    _print_summary(summary, client.spool.rejected_path)


def _print_summary(summary, rejected_path: Path | None = None, *, sent: bool = True) -> None:
    typer.echo(f"{summary.source}: {summary.files} files, {summary.read} records read")
    rows = [
        ("imported", summary.imported, "new events stored"),
        ("duplicates", summary.duplicates, "already stored"),
        ("not events", summary.other, "tool results, system lines, ..."),
        ("skipped", summary.skipped, "bad records, not sent"),
        ("rejected", summary.rejected, f"refused by the service, kept in {rejected_path}"),
        ("spooled", summary.spooled, "wait in the spool for `pps ingest flush`"),
    ]
    for name, count, what in rows if sent else rows[3:4]:
        if count or name in ("imported", "duplicates", "skipped"):
            typer.echo(f"  {name:<11} {count:>9,}  {what}")
    if summary.errors:
        typer.echo("first errors:")
        for error in summary.errors:
            typer.echo(f"  {error}")
    if summary.service_error:
        typer.echo(f"the service did not take everything: {summary.service_error}", err=True)


@app.command("claude-code")
def import_claude_code(
    paths: Annotated[
        list[Path], typer.Argument(exists=True, help="Transcript files or folders (*.jsonl).")
    ],
    url: Url = None,
    port: Port = None,
) -> None:
    """Claude Code session transcripts, turn by turn, with the hooks' uids."""
    from ingest.importers import claude_code as transcripts

    _import("claude-code", url, port, lambda i, p: transcripts.run(i, paths, progress=p))


@app.command("discord-db")
def import_discord_db(
    database: Annotated[Path, typer.Argument(exists=True, dir_okay=False)],
    url: Url = None,
    port: Port = None,
) -> None:
    """A Discord daemon's SQLite database: its events and messages tables."""
    from ingest.importers import discord_db

    def work(importer, progress):
        try:
            return discord_db.run(importer, database, progress=progress)
        except discord_db.DatabaseError as exc:
            fail(str(exc))

    _import("discord-db", url, port, work)


@app.command("journals")
def import_journals(
    folder: Annotated[Path, typer.Argument(exists=True, file_okay=False)],
    attach: Annotated[
        bool, typer.Option("--attach", help="Attach the folder as a domain collection instead.")
    ] = False,
    name: AttachName = None,
    url: Url = None,
    port: Port = None,
) -> None:
    """Dated markdown journals as longform events (or, with --attach, a collection)."""
    from ingest.client import ClientConfigError
    from ingest.importers import journals

    if attach:
        try:
            entry = journals.attach(settings_for(url=url, port=port), folder, name)
        except ClientConfigError as exc:
            fail(str(exc))
        typer.echo(f"attached {entry.path} as collection {entry.name!r} ({entry.files} files)")
        typer.echo(
            "the service searches domain collections inside the entity's home: copy or move"
            f" the folder to <home>/{entry.name} and add {entry.name!r} to"
            " PPS_DOMAIN_COLLECTIONS (a symlink leaving the home is not followed)"
        )
        return
    _import("journals", url, port, lambda i, p: journals.run(i, folder, progress=p))


@app.command("openclaw")
def import_openclaw(
    workspace: Annotated[Path, typer.Argument(exists=True, file_okay=False)],
    name: AttachName = None,
    url: Url = None,
    port: Port = None,
) -> None:
    """An OpenClaw workspace (MEMORY.md, memory/*.md) attached as the memory files."""
    from ingest.client import ClientConfigError
    from ingest.importers import openclaw

    try:
        entry, summary = openclaw.attach(settings_for(url=url, port=port), workspace, name)
    except (ClientConfigError, openclaw.WorkspaceError) as exc:
        fail(str(exc))
    _print_summary(summary, sent=False)
    typer.echo(f"attached {entry.path} as memory files {entry.name!r} ({entry.files} files)")
    typer.echo(
        "for the service to search them in place, make the workspace the entity's home:"
        f' PPS_ENTITY_HOMES=\'{{"<entity>": "{entry.path}"}}\''
    )

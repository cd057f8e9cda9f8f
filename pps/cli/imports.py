"""`pps import`: history from elsewhere (Claude Code transcripts, a Discord daemon's
database, markdown journals, an OpenClaw workspace's memory files), sent through the
client as events."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pps.cli.ingest import open_client
from pps.cli.options import ClientToken, Port, Url, fail, settings_for
from pps.cli.portable import import_export

app = typer.Typer(
    help="Import history as events: Claude Code transcripts, a Discord daemon's database, "
    "markdown journals, an OpenClaw workspace's memory files, an export of pps. Re-runs "
    "store nothing twice.",
    no_args_is_help=True,
)


def _import(source: str, url: str | None, port: int | None, token_file: Path | None, work) -> None:
    """Build the client and an Import, run `work(importer, progress)`, print the summary.
    A progress bar is drawn only on a terminal: piped or redirected, the output is the
    summary alone."""
    from rich.console import Console
    from rich.progress import Progress

    from ingest.importers import Import, Summary

    settings = settings_for(url=url, port=port, token_file=token_file)
    client = open_client(settings)
    console = Console(stderr=True)
    with client:
        importer = Import(client, Summary(source), max_content_bytes=settings.max_content_bytes)
        if console.is_terminal:
            with Progress(console=console, transient=True) as progress:
                summary = work(importer, progress)
        else:
            summary = work(importer, None)
    _print_summary(summary, client)


def _print_summary(summary, client) -> None:
    typer.echo(f"{summary.source}: {summary.files} files, {summary.read} records read")
    rows = [
        ("imported", summary.imported, f"new events stored by {client.url}"),
        ("duplicates", summary.duplicates, "already stored"),
        ("not events", summary.other, "tool results, system lines, ..."),
        ("skipped", summary.skipped, "bad records, not sent"),
        (
            "rejected",
            summary.rejected,
            f"refused by the service, kept in {client.spool.rejected_path}",
        ),
        ("spooled", summary.spooled, f"wait in {client.spool.path} for `pps ingest flush`"),
    ]
    for name, count, what in rows:
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
    token_file: ClientToken = None,
    port: Port = None,
) -> None:
    """Claude Code session transcripts, turn by turn, with the hooks' uids."""
    from ingest.importers import claude_code as transcripts

    _import(
        "claude-code", url, port, token_file, lambda i, p: transcripts.run(i, paths, progress=p)
    )


@app.command("discord-db")
def import_discord_db(
    database: Annotated[Path, typer.Argument(exists=True, dir_okay=False)],
    url: Url = None,
    token_file: ClientToken = None,
    port: Port = None,
) -> None:
    """A Discord daemon's SQLite database: its events and messages tables."""
    from ingest.importers import discord_db

    def work(importer, progress):
        try:
            return discord_db.run(importer, database, progress=progress)
        except discord_db.DatabaseError as exc:
            fail(str(exc))

    _import("discord-db", url, port, token_file, work)


@app.command("journals")
def import_journals(
    folder: Annotated[Path, typer.Argument(exists=True, file_okay=False)],
    url: Url = None,
    token_file: ClientToken = None,
    port: Port = None,
) -> None:
    """Dated markdown journals (a date in each file's path) as longform events."""
    from ingest.importers import journals

    _import("journals", url, port, token_file, lambda i, p: journals.run(i, folder, progress=p))


@app.command("openclaw")
def import_openclaw(
    workspace: Annotated[Path, typer.Argument(exists=True, file_okay=False)],
    url: Url = None,
    token_file: ClientToken = None,
    port: Port = None,
) -> None:
    """An OpenClaw workspace's memory files (MEMORY.md, memory/*.md) as longform events."""
    from ingest.importers import openclaw

    def work(importer, progress):
        try:
            return openclaw.run(importer, workspace, progress=progress)
        except openclaw.WorkspaceError as exc:
            fail(str(exc))

    _import("openclaw", url, port, token_file, work)


# `pps import export DIR`: an export of pps (engine/backup/importing.py), straight into a
# data dir rather than through the client.
app.command("export")(import_export)

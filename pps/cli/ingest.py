"""`pps ingest`: the client's spool, events taken on but not yet acknowledged."""

from __future__ import annotations

import typer

from pps.cli.options import Port, Url, fail, settings_for

app = typer.Typer(
    help="The client's spool: events taken on but not yet acknowledged.", no_args_is_help=True
)


@app.command("flush")
def ingest_flush(url: Url = None, port: Port = None) -> None:
    """Send the spool now, in order (waiting for a flush running elsewhere)."""
    from ingest.client import Client, ClientConfigError

    try:
        client = Client.from_settings(settings_for(url=url, port=port))
    except ClientConfigError as exc:
        fail(str(exc))
    with client:
        result = client.flush(wait=True)
        kept = client.spool.rejected_count()
        typer.echo(
            f"sent: {result.stored} stored, {result.duplicates} duplicates,"
            f" {result.rejected} rejected; {result.pending} waiting in {client.spool.path}"
        )
        if kept:
            typer.echo(f"{kept} rejected events are kept in {client.spool.rejected_path}")
    if result.error is not None:
        fail(f"stopped: {result.error}")

"""`pps ingest`: the client's spool, events taken on but not yet acknowledged.

A client keeps one spool per service and token (see ingest.hook.identity): events
spooled for http://localhost:8000 wait in another file than those for
http://127.0.0.1:8000, and a token of another entity has its own. So `flush` says which
service, token and spool it is about, asks the service even when its spool is empty (a
wrong port is an error, not "nothing waiting"), and names the other spools that hold
events, with the service each was written for.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from engine.kernel.config import Settings
from pps.cli.options import ClientToken, Port, Url, fail, settings_for

app = typer.Typer(
    help="The client's spool: events taken on but not yet acknowledged.", no_args_is_help=True
)


def open_client(settings: Settings):
    """The client for these settings, or exit with what to set."""
    from ingest.client import Client, ClientConfigError

    if settings.token is None and settings.token_file is None:
        fail("no entity token: pass --token-file FILE, or set PPS_TOKEN_FILE (or PPS_TOKEN)")
    try:
        return Client.from_settings(settings)
    except ClientConfigError as exc:
        fail(str(exc))


def token_source(settings: Settings) -> str:
    if settings.token is not None:
        return "the token in PPS_TOKEN"
    return f"the token in {settings.token_file}"


def _flush_hook_calls(settings: Settings, client) -> str | None:
    """Send the hook calls the hook client (ingest.hook) spooled for this service and
    token; why it stopped, if it did."""
    from ingest import hook
    from ingest.client import client_dir, read_token

    found = hook.Setup(client.url, read_token(settings), str(client_dir(settings)), 0)
    spool = hook.Spool(found)
    for other in sorted(client_dir(settings).glob("hooks-*.jsonl")):
        calls = hook.Spool.count(other)
        if other.name != Path(spool.path).name and calls:
            typer.echo(
                f"{hook.waiting(calls)} in another spool, for another service or token:"
                f" {other} (the next hook installed with that token sends them, or `pps"
                " ingest flush --url URL --token-file FILE`)"
            )
    waiting = spool.pending()
    if not waiting:
        return None
    log: list[str] = []
    deadline = time.monotonic() + settings.client_timeout_s * waiting
    emptied, answer = spool.flush(found, deadline, log)
    left = spool.pending()
    typer.echo(f"hook calls ({spool.path}): {waiting - left} sent; {left} waiting")
    for line in log:
        typer.echo(f"  {line}")
    if emptied:
        return None
    return answer.problem if answer is not None else "another hook is sending them"


@app.command("flush")
def ingest_flush(url: Url = None, token_file: ClientToken = None, port: Port = None) -> None:
    """Send the spool now, in order (waiting for a flush running elsewhere)."""
    from ingest.client import other_spools

    settings = settings_for(url=url, port=port, token_file=token_file)
    client = open_client(settings)
    with client:
        typer.echo(f"service {client.url}, as {token_source(settings)}")
        typer.echo(f"spool {client.spool.path}")
        waiting = client.spool.pending()
        result = client.flush(wait=True)
        problem = result.error
        if waiting == 0 and problem is None:
            problem = client.check()
            if problem is None:
                typer.echo("nothing to send: no event waits in this spool")
            else:
                problem += "; no event waits in this spool"
        else:
            typer.echo(
                f"sent: {result.stored} stored, {result.duplicates} duplicates,"
                f" {result.rejected} rejected; {result.pending} waiting"
            )
        kept = client.spool.rejected_count()
        if kept:
            typer.echo(f"{kept} rejected events are kept in {client.spool.rejected_path}")
        problem = _flush_hook_calls(settings, client) or problem
    if settings.spool_path is None:
        for other in other_spools(settings, client.spool.path):
            if other.service == client.url:
                where, how = "for this service with another token", "--token-file FILE"
            elif other.service:
                where, how = f"for {other.service}", f"--url {other.service} --token-file FILE"
            else:
                where, how = "for another service or token", "--url URL --token-file FILE"
            typer.echo(
                f"{other.pending} events wait in another spool, {where}: {other.path}"
                f" (send them with `pps ingest flush {how}`, FILE holding their token)"
            )
    if problem is not None:
        fail(f"stopped: {problem}" if waiting else problem)

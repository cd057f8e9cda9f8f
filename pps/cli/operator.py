"""`pps operator`: the operator's own credential."""

from __future__ import annotations

import sys

import typer

from engine.capture import entities
from engine.store.db import Database
from pps.cli.entity import _open_token_file
from pps.cli.options import DataDir, TokenFile, fail, settings_for

app = typer.Typer(help="The operator's credential for REST.", no_args_is_help=True)


@app.command("token")
def operator_token(data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Make the operator's token for /v1/operator (any old one stops working); print it
    (the only line on stdout). No entity holds it: keep it away from agents."""
    db = Database.open(settings_for(data_dir=data_dir))
    target = _open_token_file(token_file) if token_file is not None else None
    try:
        token = entities.rotate_operator(db)
        if target is not None:
            try:
                target.deliver(token)
            except OSError as exc:
                sys.stdout.write(token + "\n")
                fail(f"could not write {token_file}: {exc}; the new token is the line above")
    finally:
        if target is not None:
            target.close()
    sys.stdout.write(token + "\n")

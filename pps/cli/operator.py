"""`pps operator`: the operator's own credential."""

from __future__ import annotations

import typer

from engine.capture import entities
from engine.store.db import Database
from pps.cli.entity import deliver_token
from pps.cli.options import DataDir, TokenFile, settings_for

app = typer.Typer(help="The operator's credential for REST.", no_args_is_help=True)


@app.command("token")
def operator_token(data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Make the operator's token for /v1/operator (any old one stops working); print it
    (the only line on stdout). No entity holds it: keep it away from agents."""
    db = Database.open(settings_for(data_dir=data_dir))
    deliver_token(lambda: entities.rotate_operator(db), token_file)

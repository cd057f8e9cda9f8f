"""`pps operator`: the operator's own credential."""

from __future__ import annotations

import typer

from pps.cli.entity import deliver_token
from pps.cli.options import DataDir, TokenFile, settings_for

app = typer.Typer(help="The operator's credential for REST.", no_args_is_help=True)


@app.command("token")
def operator_token(data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Make the operator's token for /v1/operator (any old one stops working); print it
    (the only line on stdout). No entity holds it: keep it away from agents."""
    from engine.api import Service

    with Service.open(settings_for(data_dir=data_dir)) as service:
        deliver_token(service.entities.rotate_operator, token_file)

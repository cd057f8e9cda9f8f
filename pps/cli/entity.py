"""`pps entity`: create entities and manage their tokens."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from engine.capture import entities
from engine.store.db import Database, ensure_private_file
from engine.store.errors import Conflict, InputError, NotFound
from pps.cli.options import DataDir, TokenFile, fail, settings_for

app = typer.Typer(help="Create entities and manage their tokens.", no_args_is_help=True)


@app.command("create")
def entity_create(name: str, data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Create an entity; print its token (the only line on stdout). Keep it secret."""
    _issue_token(entities.create, name, data_dir, token_file)


@app.command("rotate")
def entity_rotate(name: str, data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Give an entity a new token; the old one stops working at once."""
    _issue_token(entities.rotate, name, data_dir, token_file)


@app.command("list")
def entity_list(data_dir: DataDir = None) -> None:
    """List entities (names and dates; tokens are never shown again)."""
    db = Database.open(settings_for(data_dir=data_dir))
    for entity in entities.list_all(db):
        rotated = f"  rotated {entity.rotated_at}" if entity.rotated_at else ""
        typer.echo(f"{entity.name}  created {entity.created_at}{rotated}")


def _issue_token(service, name: str, data_dir: Path | None, token_file: Path | None) -> None:
    db = Database.open(settings_for(data_dir=data_dir))
    try:
        token = service(db, name)
    except (InputError, Conflict, NotFound) as exc:
        fail(str(exc))
    if token_file is not None:
        ensure_private_file(token_file).write_text(token + "\n")
    sys.stdout.write(token + "\n")

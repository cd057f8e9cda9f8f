"""`pps shared`: shared stores, one memory several entities search and write. Only an
operator (whoever runs this command on the data dir) makes stores and members; the
`pps operator token` command makes the token for doing the same over REST."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pps.cli.options import DataDir, engine_errors, settings_for

if TYPE_CHECKING:
    from engine.api.stores import Stores
    from engine.contracts.stores import Store

app = typer.Typer(help="Shared stores: one memory for several entities.", no_args_is_help=True)


@contextmanager
def _stores(data_dir: Path | None) -> Iterator[Stores]:
    """The data dir's shared stores, as the operator keeps them."""
    from engine.api import Service

    with Service.open(settings_for(data_dir=data_dir)) as service:
        yield service.stores


def _show(store: Store) -> str:
    edit = "  members-edit" if store.members_edit else ""
    members = ", ".join(store.members) or "no members"
    return f"{store.name}  {store.memories} memories  members: {members}{edit}"


@app.command("create")
def create(
    store: str,
    members_edit: Annotated[
        bool,
        typer.Option("--members-edit", help="Members may change each other's memories."),
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Create a shared store (empty, no members)."""
    with engine_errors(), _stores(data_dir) as stores:
        typer.echo(_show(stores.create(store, members_edit)))


@app.command("add")
def add(store: str, entity: str, data_dir: DataDir = None) -> None:
    """Make an entity a member of a store."""
    with engine_errors(), _stores(data_dir) as stores:
        typer.echo(_show(stores.add_member(store, entity)))


@app.command("remove")
def remove(store: str, entity: str, data_dir: DataDir = None) -> None:
    """Take a member out of a store; its access ends at once (what it wrote stays)."""
    with engine_errors(), _stores(data_dir) as stores:
        typer.echo(_show(stores.remove_member(store, entity)))


@app.command("list")
def list_stores(data_dir: DataDir = None) -> None:
    """List the shared stores with their members."""
    with _stores(data_dir) as stores:
        for store in stores.list():
            typer.echo(_show(store))


@app.command("delete")
def delete(
    store: str,
    yes: Annotated[bool, typer.Option("--yes", help="Delete; otherwise only show.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Delete a store with its files, index rows and memberships (a dry run without --yes)."""
    with _stores(data_dir) as stores, engine_errors():
        gone = stores.delete(store, dry_run=not yes)
    members = ", ".join(gone.members) or "none"
    verb = "deleted" if yes else "would delete"
    typer.echo(
        f"{verb} {gone.store}: {gone.memories} memories, {gone.files} files, members: {members}"
    )
    if not yes:
        typer.echo(f"nothing was deleted; run `pps shared delete {store} --yes` to delete it")


@app.command("index")
def index_folder(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="A folder of markdown files.")],
    store: Annotated[str, typer.Option("--store", help="The shared store.")],
    agent: Annotated[str, typer.Option("--agent", help="The agent label of its memories.")],
    data_dir: DataDir = None,
) -> None:
    """Index each markdown file of DIR into a store as one memory written by the operator;
    re-runnable (unchanged files skipped, changed rewritten, gone removed)."""
    with _stores(data_dir) as stores, engine_errors():
        report = stores.open(store).index_folder(folder, agent)
    typer.echo(json.dumps(report.model_dump()))

"""What every command shares: the common options, the Settings they build, and how a
command fails (one line on stderr, exit 1), an engine error included."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from engine.kernel.config import Settings, default_folder
from engine.kernel.errors import EngineError

if TYPE_CHECKING:  # the engine loads when a command opens the data dir, not before
    from engine.api import Service


def _data_dir_help() -> str:
    """The data dir a command opens, as its --help says it: the environment's, else the
    user's data folder (`pps doctor` also counts `.env`)."""
    default = default_folder("data_dir")
    chosen = os.environ.get("PPS_DATA_DIR", "").strip()
    now = f"now {Path(chosen).expanduser().absolute()}, " if chosen else ""
    where = f"env: PPS_DATA_DIR, {now}default: {default}"
    return f"Where the database and entity homes live [{where}]."


DataDir = Annotated[Path | None, typer.Option("--data-dir", help=_data_dir_help())]
Port = Annotated[
    int | None, typer.Option("--port", help="Server port [env: PPS_PORT, default: 8000].")
]
EntityOpt = Annotated[str | None, typer.Option("--entity", help="Only this entity.")]
Url = Annotated[
    str | None,
    typer.Option("--url", help="The service [env: PPS_URL, default: http://127.0.0.1:<port>]."),
]
TokenFile = Annotated[
    Path | None,
    typer.Option(
        "--token-file", help="Also write the token to this file (0600; its folder is made 0700)."
    ),
]
ClientToken = Annotated[
    Path | None,
    typer.Option("--token-file", help="The entity's token file [env: PPS_TOKEN_FILE]."),
]
"""Which entity a client command acts as (else PPS_TOKEN_FILE or PPS_TOKEN)."""


def settings_for(**overrides) -> Settings:
    """Settings from the environment and .env, with the given command-line values on top.
    A token file named on the command line wins over a token in the environment."""
    os.umask(0o077)
    given = {k: v for k, v in overrides.items() if v is not None}
    if "token_file" in given:
        given["token"] = None
    return Settings(**given)


def fail(message: str) -> NoReturn:
    typer.echo(f"pps: {message}", err=True)
    raise typer.Exit(1)


@contextmanager
def engine_errors() -> Iterator[None]:
    """How a command answers an error of the engine's error table: its message, as every
    failure (`fail`)."""
    try:
        yield
    except EngineError as exc:
        fail(str(exc))


def graph_settings(data_dir: Path | None, doing: str) -> Settings:
    """Settings for a command over the graph; fails without a graph."""
    settings = settings_for(data_dir=data_dir)
    if settings.graph_backend == "none":
        fail(f"GRAPH_BACKEND=none: there is no graph to {doing}")
    return settings


def entity_names(service: Service, entity: str | None) -> list[str]:
    """Every entity's name; fails when `entity` is given and is not one of them."""
    known = service.entities.names()
    if entity is not None and entity not in known:
        fail(f"no entity named {entity!r}")
    return known


def chosen_entities(service: Service, entity: str | None) -> list[str]:
    """The one entity named (which must exist), or every entity."""
    known = entity_names(service, entity)
    return [entity] if entity else known

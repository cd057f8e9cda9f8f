"""What every command shares: the common options, the Settings they build, and how a
command fails (one line on stderr, exit 1), an engine error included."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from engine.kernel.config import Settings, default_folder
from engine.kernel.errors import EngineError


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


def graph_entities(entity: str | None, data_dir, doing: str) -> tuple:
    """(settings, the open database, the entity names) for a command over the graph: the
    one entity named (which must exist), or every entity. Fails without a graph."""
    from engine.store.db import Database

    settings = settings_for(data_dir=data_dir)
    if settings.graph_backend == "none":
        fail(f"GRAPH_BACKEND=none: there is no graph to {doing}")
    db = Database.open(settings)
    known = entity_names(db, entity)
    return settings, db, [entity] if entity else known


def entity_names(db, entity: str | None) -> list[str]:
    """Every entity's name; fails when `entity` is given and is not one of them."""
    from engine.capture import entities

    known = [e.name for e in entities.list_all(db)]
    if entity is not None and entity not in known:
        fail(f"no entity named {entity!r}")
    return known


def _reached(store, why: str | None = None):
    """A graph reached through its store alone, as the engine's graph services take it
    (it says it is unreachable when a call fails, and nothing more)."""
    import types

    return types.SimpleNamespace(
        store=store, why=why, unreachable=None, index_error=None, read_failed=lambda: None
    )


@contextmanager
def graph_here(settings, db, command: str) -> Iterator[object | None]:
    """The graph as a command reaches it (something with `.store`), or None when none is
    configured: an external one (GRAPH_URL, Neo4j) directly; the embedded FalkorDB
    through the running server's socket, or started here under the data dir's lock when
    no server runs (held in `command`'s name). A graph that cannot be reached is a store
    whose reads fail (`pps check` reports it unavailable), or None as its store, with
    `why`."""
    if settings.graph_backend == "none":
        yield None
        return
    from engine.graph.store import GraphStore
    from engine.kernel.lock import DataDirBusy, DataDirLock

    embedded = settings.graph_backend == "falkordb" and not settings.graph_url
    if not embedded:
        store = GraphStore(settings).start()
        try:
            yield _reached(store)
        finally:
            store.stop()
        return
    try:
        lock = DataDirLock.acquire(settings.data_dir, command)
    except DataDirBusy:  # a server runs: its FalkorDB answers on the data dir's socket
        socket = settings.data_dir / "graph" / "falkordb.sock"
        if not socket.exists():
            why = "the server's FalkorDB listens on a port only it knows; GET /v1/check asks it"
            yield _reached(None, why)
            return
        store = GraphStore(settings, falkordb={"unix_socket_path": str(socket)}).start()
        try:
            yield _reached(store)
        finally:
            store.stop()
        return
    from engine.graph.backend import Graph

    graph = None
    try:
        graph = Graph(settings, db).start(sweep=False)
        yield graph
    finally:
        if graph is not None:
            graph.stop()
        lock.release()

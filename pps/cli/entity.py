"""`pps entity`: create entities and manage their tokens. The engine's modules are loaded
by the command that runs, not by `--help`."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import typer

from pps.cli.options import DataDir, TokenFile, engine_errors, fail, settings_for

app = typer.Typer(help="Create entities and manage their tokens.", no_args_is_help=True)


@app.command("create")
def entity_create(name: str, data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Create an entity; print its token (the only line on stdout). Keep it secret."""
    _issue_token(name, data_dir, token_file, create=True)


@app.command("rotate")
def entity_rotate(name: str, data_dir: DataDir = None, token_file: TokenFile = None) -> None:
    """Give an entity a new token; the old one stops working at once."""
    _issue_token(name, data_dir, token_file, create=False)


@app.command("list")
def entity_list(data_dir: DataDir = None) -> None:
    """List entities (names and dates; tokens are never shown again)."""
    from engine.api import Service

    with Service.open(settings_for(data_dir=data_dir)) as service:
        for entity in service.entities.list():
            rotated = f"  rotated {entity.rotated_at}" if entity.rotated_at else ""
            typer.echo(f"{entity.name}  created {entity.created_at}{rotated}")


def _issue_token(
    name: str, data_dir: Path | None, token_file: Path | None, *, create: bool
) -> None:
    """Issue a token (a new entity's with `create`, else a new one for the entity) and
    deliver it (the file, then stdout), or change nothing.

    The file is opened before the token exists: a folder that cannot be made or a file
    that cannot be written fails with nothing created. Should writing it still fail, a
    new entity is removed again; a rotated token is printed all the same, since the old
    one no longer works."""
    from engine.api import Service

    with Service.open(settings_for(data_dir=data_dir)) as service:
        entities = service.entities
        with engine_errors():
            entities.check_name(name)

        def issue() -> str:
            with engine_errors():
                return entities.create(name) if create else entities.rotate(name)

        undo = (
            (lambda: entities.forget_undelivered(name), f"{name!r} was not created")
            if create
            else None
        )
        deliver_token(issue, token_file, undo)


def deliver_token(issue, token_file: Path | None, undo=None) -> None:
    """`issue()` a token and deliver it: to the file (opened first, so that nothing is
    issued when it cannot be), then on stdout. Should writing the file still fail,
    `undo` = (take it back, what to say) is called, or the token is printed all the same
    (a rotated one: the old one no longer works)."""
    target = _open_token_file(token_file) if token_file is not None else None
    try:
        token = issue()
        if target is not None:
            try:
                target.deliver(token)
            except OSError as exc:
                if undo is not None:
                    take_back, said = undo
                    take_back()
                    fail(f"could not write {token_file}: {exc}; {said}")
                sys.stdout.write(token + "\n")
                fail(f"could not write {token_file}: {exc}; the new token is the line above")
    finally:
        if target is not None:
            target.close()
    sys.stdout.write(token + "\n")


class _TokenFile:
    """A token file opened for writing before the token exists: written to a private
    temporary file beside it, then renamed over it, so it is whole or untouched."""

    def __init__(self, path: Path):
        self.path = path
        self.temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        self.fd: int | None = os.open(
            self.temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600
        )

    def deliver(self, token: str) -> None:
        fd = self.fd
        assert fd is not None  # open from the start, and delivered once
        os.write(fd, (token + "\n").encode())
        os.fsync(fd)
        os.close(fd)
        self.fd = None
        os.replace(self.temporary, self.path)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        with contextlib.suppress(FileNotFoundError):
            self.temporary.unlink()


def _open_token_file(path: Path) -> _TokenFile:
    path = path.expanduser()
    if path.is_dir():
        fail(f"--token-file {path} is a folder; name a file in it")
    try:
        _private_folders(path.parent)
        return _TokenFile(path)
    except OSError as exc:
        fail(f"cannot write the token file {path}: {exc.strerror or exc}; nothing was changed")


def _private_folders(folder: Path) -> None:
    """Make the missing folders of `folder`, each 0700 (existing ones are left as they
    are: the token file itself is 0600)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        made.mkdir(mode=0o700)
        made.chmod(0o700)

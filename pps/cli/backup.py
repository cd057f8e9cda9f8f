"""`pps backup` and `pps restore` (engine/backup/archiving.py and restoring.py). A backup
runs beside a running server without its lock: SQLite's online backup API reads one
consistent state while the server keeps writing. A restore writes only into an empty
folder, after checking the whole archive; there is no restore over HTTP."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from pps.cli.options import DataDir, fail, settings_for

PASSPHRASE_ENV = "PPS_BACKUP_PASSPHRASE"
MIN_PASSPHRASE = 12


def backup(
    out: Annotated[Path, typer.Argument(help="The archive to write (never overwritten).")],
    entity: Annotated[
        str | None,
        typer.Option("--entity", help="Only this entity: its rows and home, nobody else's."),
    ] = None,
    encrypt: Annotated[
        bool,
        typer.Option(
            "--encrypt",
            help=f"Encrypt with a passphrase (asked twice, or {PASSPHRASE_ENV}) using age.",
        ),
    ] = False,
    recipient: Annotated[
        list[str] | None,
        typer.Option("--recipient", help="Encrypt to this age public key (age1...); repeatable."),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Write one archive of the data dir (or of one entity) while the server runs: the
    database's consistent snapshot, the homes, the shared stores, a manifest. The graph
    is re-derived after a restore (`pps replay graph`)."""
    from importlib.metadata import PackageNotFoundError, version

    from engine.api.backups import BackupError, Backups
    from engine.backup.archiving import Encryption

    settings = settings_for(data_dir=data_dir)
    encryption = None
    if recipient:
        encryption = Encryption(recipients=tuple(recipient))
    elif encrypt:
        encryption = Encryption(passphrase=_passphrase(confirm=True))
    try:
        pps_version = version("pps")
    except PackageNotFoundError:
        pps_version = "unknown"
    try:
        # From the settings: the backup opens the data dir itself, and one that holds no
        # database is refused, not made.
        written = Backups(settings).create(
            out, entity=entity, encryption=encryption, version=pps_version
        )
    except BackupError as exc:
        fail(str(exc))
    manifest = written.manifest
    events = sum(e["events"] for e in manifest["entities"])
    files = sum(e["files"] for e in manifest["entities"])
    typer.echo(
        f"{written.path}: {written.size} bytes, sha256 {written.sha256}"
        f"{f', encrypted ({written.encrypted})' if written.encrypted else ''}"
    )
    typer.echo(
        f"{len(manifest['entities'])} entities, {events} events, {files} home files,"
        f" {len(manifest['shared_stores'])} shared stores; schema {manifest['schema_version']}"
    )
    for skipped in manifest["skipped"]:
        typer.echo(f"skipped {skipped}", err=True)
    typer.echo("the graph is not in it: `pps replay graph` rebuilds it after a restore")


def restore(
    archive_path: Annotated[
        Path, typer.Argument(metavar="ARCHIVE", help="An archive from `pps backup`.")
    ],
    data_dir: Annotated[
        Path,
        typer.Option("--data-dir", help="An empty (or missing) folder to restore into."),
    ],
    identity: Annotated[
        Path | None,
        typer.Option("--identity", help="The age identity file for an archive sent to a key."),
    ] = None,
) -> None:
    """Check every member of the archive against its manifest, then write it into an
    empty data dir (0600 files, 0700 folders). A wrong passphrase or key, a damaged or
    altered archive, or a folder that is not empty is refused, and nothing is written."""
    from engine.api.backups import BackupError, Backups

    os.umask(0o077)
    identities = None
    if identity is not None:
        try:
            identities = [identity.read_text()]
        except OSError as exc:
            fail(f"cannot read {identity}: {exc.strerror or exc}")
    try:
        restored = Backups.restore(
            archive_path,
            data_dir,
            passphrase=lambda: _passphrase(confirm=False),
            identities=identities,
        )
    except BackupError as exc:
        fail(str(exc))
    manifest = restored.manifest
    events = sum(e["events"] for e in manifest["entities"])
    names = ", ".join(e["name"] for e in manifest["entities"]) or "none"
    typer.echo(
        f"restored into {restored.data_dir}: entities {names}; {events} events,"
        f" {len(manifest['members'])} files checked (backup of {manifest['created_at']})"
    )
    for note in restored.notes:
        typer.echo(note)


def _passphrase(confirm: bool) -> str:
    """The passphrase from PPS_BACKUP_PASSPHRASE, else asked on the terminal (twice for a
    backup). A new archive's passphrase has at least MIN_PASSPHRASE characters: whoever
    holds the file can try passphrases offline, as fast as scrypt lets them."""
    given = os.environ.get(PASSPHRASE_ENV)
    if not given:
        if not sys.stdin.isatty():
            fail(
                f"no terminal to ask a passphrase on: set {PASSPHRASE_ENV}"
                + (" or encrypt to a key with --recipient" if confirm else "")
            )
        given = typer.prompt("Passphrase", hide_input=True, confirmation_prompt=confirm)
    if confirm and len(given) < MIN_PASSPHRASE:
        fail(f"a passphrase needs at least {MIN_PASSPHRASE} characters (this one has {len(given)})")
    return given

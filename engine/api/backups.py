"""Archives of the data dir, an entity's portable export, and the record of both
(`service.backups`, or `Backups(settings)`).

A backup, an export and an import open the data dir themselves (and refuse one that
holds no database, rather than make one): `Backups` is made from the settings alone for
them, as well as by a service (with its database). Why a backup or a restore did not
happen is a `BackupError`, an export or an import an `ExportError`: a face catches these
by these names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.backup import archiving, exporting, importing, records, restoring
from engine.backup.archive import BackupError
from engine.backup.archiving import Encryption, Written
from engine.backup.exporting import Exported
from engine.backup.importing import Imported, Plan
from engine.backup.portable import ExportError
from engine.backup.records import BackupRecord
from engine.backup.restoring import Restored
from engine.kernel.config import Settings
from engine.store.db import Database

__all__ = ["BackupError", "Backups", "ExportError"]


class Backups:
    """Archives of the data dir, an entity's portable export, and the record of both (the
    record: a service's only, `service.backups`)."""

    def __init__(self, settings: Settings, db: Database | None = None):
        self.settings, self.db = settings, db

    @property
    def _db(self) -> Database:
        assert self.db is not None, "the record of backups is read by a service"
        return self.db

    def recent(self, limit: int = 50) -> list[BackupRecord]:
        return records.recent(self._db, limit)

    def last(self) -> BackupRecord | None:
        return records.last(self._db)

    def status(self) -> dict[str, Any]:
        """The last backup's time and age (the `backup` component of /health)."""
        return records.status(self._db)

    def create(
        self,
        out: Path,
        *,
        entity: str | None = None,
        encryption: Encryption | None = None,
        version: str = "unknown",
    ) -> Written:
        return archiving.create(
            self.settings, out, entity=entity, encryption=encryption, version=version
        )

    def export(self, entity: str, out: Path, version: str = "unknown") -> Exported:
        return exporting.export(self.settings, entity, out, version)

    def plan_import(self, folder: Path, entity: str | None = None) -> Plan:
        return importing.check(self.settings, folder, entity)

    def apply_import(
        self, plan: Plan, progress: Callable[[str, int, int], None] | None = None
    ) -> Imported:
        return importing.apply(self.settings, plan, progress)

    @staticmethod
    def restore(
        archive: Path,
        data_dir: Path,
        *,
        passphrase: Callable[[], str] | None = None,
        identities: list[str] | None = None,
    ) -> Restored:
        """Restore an archive into a data dir no server holds (nothing need be open)."""
        return restoring.restore(archive, data_dir, passphrase=passphrase, identities=identities)

"""The operator's parts of a `Service`: the entities and their tokens, the shared stores,
the backups, and how each slow part of the engine stands (for `pps doctor`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from engine.api.parts import Parts
from engine.api.shared import SharedStore
from engine.backup import archiving, exporting, importing, records, restoring
from engine.backup.archiving import Encryption, Written
from engine.backup.exporting import Exported
from engine.backup.importing import Imported, Plan
from engine.backup.records import BackupRecord
from engine.backup.restoring import Restored
from engine.capture import entities
from engine.capture.entities import Entity, Holder
from engine.contracts import stores
from engine.contracts.stores import Deleted, Store
from engine.crystal import summarize
from engine.recall import audit
from engine.search import embeddings, rerank


class Entities:
    """Who may call: the entities, their tokens, and the operator's token."""

    NAME_PATTERN = entities.NAME_PATTERN.pattern
    """What an entity's (or a shared store's) name may look like."""

    def __init__(self, parts: Parts):
        self.db = parts.db

    def list(self) -> list[Entity]:
        return entities.list_all(self.db)

    def names(self) -> list[str]:
        return [e.name for e in entities.list_all(self.db)]

    def index_keys(self) -> list[str]:
        """Every name the index keeps, by name: the entities and the shared stores
        (`shared:<store>`)."""
        return entities.index_keys(self.db)

    @staticmethod
    def check_name(name: str) -> str:
        return entities.check_name(name)

    def create(self, name: str) -> str:
        """A new entity; returns its token (shown once)."""
        return entities.create(self.db, name)

    def rotate(self, name: str) -> str:
        return entities.rotate(self.db, name)

    def rotate_operator(self) -> str:
        return entities.rotate_operator(self.db)

    def forget_undelivered(self, name: str) -> None:
        entities.forget_undelivered(self.db, name)

    def authenticate(self, token: str) -> str | None:
        """The entity a token belongs to, or None."""
        return entities.authenticate(self.db, token)

    def is_operator(self, token: str) -> bool:
        return entities.is_operator(self.db, token)

    def holder(self, token: str) -> Holder | None:
        return entities.holder(self.db, token)

    def token_issued(self, name: str) -> str | None:
        return entities.token_issued(self.db, name)

    def judged(self) -> list[str]:
        """The entities with recall judgments (`pps audit export`)."""
        return audit.judged_entities(self.db)

    def judgments(self, name: str) -> Iterator[dict[str, Any]]:
        return audit.export(self.db, name)


class Stores:
    """The shared stores, as the operator keeps them."""

    def __init__(self, parts: Parts):
        self.parts = parts

    def list(self) -> list[Store]:
        return stores.list_all(self.parts.db)

    def create(self, name: str, members_edit: bool = False) -> Store:
        return stores.create(self.parts.db, name, members_edit)

    def delete(self, name: str, dry_run: bool = True) -> Deleted:
        return stores.delete(self.parts.index, name, dry_run)

    def add_member(self, store: str, entity: str) -> Store:
        return stores.add_member(self.parts.db, store, entity)

    def remove_member(self, store: str, entity: str) -> Store:
        return stores.remove_member(self.parts.db, store, entity)

    def open(self, store: str) -> SharedStore:
        """The store as the operator acts on it (indexing a folder into it)."""
        return SharedStore(self.parts.index, stores.as_operator(self.parts.db, store))


class Backups:
    """Archives of the data dir, an entity's portable export, and the record of both."""

    def __init__(self, parts: Parts):
        self.parts = parts

    def recent(self, limit: int = 50) -> list[BackupRecord]:
        return records.recent(self.parts.db, limit)

    def last(self) -> BackupRecord | None:
        return records.last(self.parts.db)

    def status(self) -> dict:
        return records.status(self.parts.db)

    def create(
        self,
        out: Path,
        *,
        entity: str | None = None,
        encryption: Encryption | None = None,
        version: str = "unknown",
    ) -> Written:
        return archiving.create(
            self.parts.settings, out, entity=entity, encryption=encryption, version=version
        )

    def export(self, entity: str, out: Path, version: str = "unknown") -> Exported:
        return exporting.export(self.parts.settings, entity, out, version)

    def plan_import(self, folder: Path, entity: str | None = None) -> Plan:
        return importing.check(self.parts.settings, folder, entity)

    def apply_import(
        self, plan: Plan, progress: Callable[[str, int, int], None] | None = None
    ) -> Imported:
        return importing.apply(self.parts.settings, plan, progress)

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


class Statuses:
    """How each slow part stands, checked from a command (`pps doctor`)."""

    def __init__(self, parts: Parts):
        self.parts = parts

    def embeddings(self, load: bool = False) -> dict:
        if load:
            embeddings.get(self.parts.settings)
        return embeddings.status(self.parts.settings)

    def reranker(self, load: bool = False) -> dict:
        if load:
            rerank.get()
        return rerank.status(self.parts.settings)

    def summaries(self) -> dict:
        return summarize.status(self.parts.db, self.parts.settings)

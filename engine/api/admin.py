"""The operator's parts of a `Service`: the entities and their tokens, the shared stores,
the backups, and how each slow part of the engine stands (for `pps doctor`).

A backup, an export and an import open the data dir themselves (and refuse one that
holds no database, rather than make one), and `pps doctor` checks what it can when the
database does not open: `Backups` and `Statuses` are made from the settings alone for
them, as well as by a service (with its database). Why a backup or a restore did not
happen is a `BackupError`, an export or an import an `ExportError`, and a search model
that cannot load a `ModelUnavailable`: a face catches these by these names."""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from engine.api.parts import Parts
from engine.api.shared import SharedStore
from engine.backup import archiving, exporting, importing, records, restoring
from engine.backup.archive import BackupError
from engine.backup.archiving import Encryption, Written
from engine.backup.exporting import Exported
from engine.backup.importing import Imported, Plan
from engine.backup.portable import ExportError
from engine.backup.records import BackupRecord
from engine.backup.restoring import Restored
from engine.capture import entities
from engine.capture.entities import Entity, Holder
from engine.contracts import stores
from engine.contracts.stores import Deleted, Store
from engine.crystal import summarize
from engine.graph import backend
from engine.kernel.config import Settings
from engine.kernel.lock import DataDirBusy, DataDirLock
from engine.llm import endpoint
from engine.recall import audit
from engine.search import embeddings, rerank
from engine.search.embeddings import Unavailable as ModelUnavailable
from engine.store.db import Database

__all__ = [
    "BackupError",
    "Backups",
    "Entities",
    "ExportError",
    "ModelUnavailable",
    "Statuses",
    "Stores",
]


class Entities:
    """Who may call: the entities, their tokens, and the operator's token."""

    NAME_PATTERN = entities.NAME_PATTERN.pattern
    """What an entity's (or a shared store's) name may look like."""

    def __init__(self, parts: Parts):
        self.db = parts.db

    def list(self) -> list[Entity]:
        return entities.list_all(self.db)

    def names(self) -> builtins.list[str]:
        return [e.name for e in entities.list_all(self.db)]

    def index_keys(self) -> builtins.list[str]:
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

    def judged(self) -> builtins.list[str]:
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


class Statuses:
    """How each slow part stands, checked from a command (`pps doctor`): each a component
    of /health as the server reports it, found here. The database's and the summaries'
    need a service's database; the others, the settings alone."""

    def __init__(self, settings: Settings, db: Database | None = None):
        self.settings, self.db = settings, db

    def schema_version(self) -> int:
        assert self.db is not None, "a service's database"
        return self.db.schema_version()

    def embeddings(self, load: bool = False) -> dict[str, Any]:
        """With `load`, the model is loaded first (a model that cannot load says why)."""
        if load:
            with contextlib.suppress(embeddings.Unavailable):
                embeddings.get(self.settings)
        return embeddings.status(self.settings)

    def reranker(self, load: bool = False) -> dict[str, Any]:
        """With `load`, the reranker is loaded first where search uses one."""
        if load and self.settings.search_rerank:
            with contextlib.suppress(embeddings.Unavailable):
                rerank.get()
        return rerank.status(self.settings)

    def summaries(self) -> dict[str, Any]:
        assert self.db is not None, "a service's database"
        return summarize.status(self.db, self.settings)

    def graph(self, command: str) -> dict[str, Any]:
        """Start the graph as a server would, ask its status, stop it: under the data
        dir's lock, held in `command`'s name (not checked while another holds it)."""
        if self.settings.graph_backend == "none":
            return backend.graph_health(None)
        if self.db is None:
            return {"status": "down", "error": "the database does not open"}
        try:
            lock = DataDirLock.acquire(self.settings.data_dir, command)
        except DataDirBusy as busy:
            return {"status": "not checked", "reason": str(busy)}
        graph = None
        try:
            graph = backend.Graph(self.settings, self.db).start(sweep=False)
            return graph.status()
        except Exception as exc:  # what is wrong is the answer
            return {"status": "down", "error": f"{type(exc).__name__}: {exc}"}
        finally:
            if graph is not None:
                graph.stop()
            lock.release()

    def llm(self) -> dict[str, Any]:
        """The LLM the settings name (provider, model, where; no key)."""
        return endpoint.describe(self.settings)

    def llm_probe(self) -> dict[str, Any]:
        """Whether the LLM's endpoint answers from here (its models asked, no tokens spent)."""
        return endpoint.probe(self.settings)

    def llm_structured_output(self) -> dict[str, Any]:
        """How an openai_compatible LLM is asked for JSON: the setting, or what was learned."""
        return endpoint.structured_output(self.settings)

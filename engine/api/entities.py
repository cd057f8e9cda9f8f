"""Who may call: the entities, their tokens and the operator's token, as the operator
keeps them (`service.entities`). It stands on the database alone, so that a command that
lists or makes entities loads no search, graph or model."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from engine.capture import entities
from engine.capture.entities import Entity, Holder

if TYPE_CHECKING:
    from engine.api.parts import Parts


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
        from engine.recall import audit

        return audit.judged_entities(self.db)

    def judgments(self, name: str) -> Iterator[dict[str, Any]]:
        from engine.recall import audit

        return audit.export(self.db, name)

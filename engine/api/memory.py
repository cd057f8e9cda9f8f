"""One entity's memory: what every face calls for an entity, and nothing of another's."""

from __future__ import annotations

from functools import cached_property

from engine import backlogs, consistency, forgetting
from engine.api.capture import Events
from engine.api.crystal import CrystalChain, SummaryLog
from engine.api.graph import Texture
from engine.api.inventory import Inventory
from engine.api.parts import Parts
from engine.api.recall import Audit
from engine.api.search import Files, Search, WordPhotos
from engine.api.shared import SharedStore
from engine.consistency import CheckReport
from engine.contracts import stores, transcripts
from engine.contracts.stores import Store
from engine.contracts.transcripts import Location
from engine.forgetting import ForgetRequest, Receipt, Tombstones
from engine.llm import budget
from engine.recall import ambient, log, used
from engine.recall.log import Log, LogQuery
from engine.recall.shapes import Recall, RecallRequest
from engine.recall.used import UsedShare
from engine.search.homes import FileLines
from engine.store import queue
from engine.store.queue import QueueStatus


class Memory:
    """An entity's memory over every layer, made by `Service.memory(entity)`. Each layer
    is a part (`events`, `anchors`, `files`, `graph`, `crystals`, `summaries`,
    `inventory`, `audit`); what spans the layers is a method (`recall`, `forget`,
    `check`, `queue`)."""

    def __init__(self, parts: Parts, entity: str):
        self.parts, self.entity = parts, entity

    @cached_property
    def events(self) -> Events:
        return Events(self.parts, self.entity)

    @cached_property
    def search(self) -> Search:
        return Search(self.parts, self.entity)

    @cached_property
    def anchors(self) -> WordPhotos:
        return WordPhotos(self.parts, self.entity)

    @cached_property
    def files(self) -> Files:
        return Files(self.parts, self.entity)

    @cached_property
    def graph(self) -> Texture:
        return Texture(self.parts, self.entity)

    @cached_property
    def crystals(self) -> CrystalChain:
        return CrystalChain(self.parts, self.entity)

    @cached_property
    def summaries(self) -> SummaryLog:
        return SummaryLog(self.parts, self.entity)

    @cached_property
    def inventory(self) -> Inventory:
        return Inventory(self.parts, self.entity)

    @cached_property
    def audit(self) -> Audit:
        return Audit(self.parts, self.entity)

    # --- across the layers ---

    def recall(self, request: RecallRequest) -> Recall:
        """Every layer at once, merged into one context (ambient recall)."""
        return ambient.recall(self.parts, self.entity, request)

    def recall_log(self, ask: LogQuery) -> Log:
        return log.entries(self.parts.db, self.entity, ask)

    def used_share(self) -> UsedShare:
        """How much of what recall gave the entity its replies used."""
        return used.share(self.parts.db, self.entity)

    def forget(self, ask: ForgetRequest, asked_by: str) -> Receipt:
        """Take an event, a word-photo or a fact out of every layer; `asked_by` names the
        face (rest, mcp, web, cli) in the tombstone."""
        return forgetting.forget(self.parts.index, self.parts.graph, self.entity, ask, asked_by)

    def tombstones(self, limit: int = 100) -> Tombstones:
        return forgetting.tombstones(self.parts.db, self.entity, limit)

    def check(self, repair: bool = False) -> CheckReport:
        """Whether every layer agrees with raw capture (and mend what it can, with `repair`)."""
        return consistency.run(self.parts.index, self.parts.graph, [self.entity], repair=repair)

    def queue(self) -> QueueStatus:
        """The entity's jobs and what each layer is still making."""
        return backlogs.queue_status(self.parts.db, self.parts.settings, self.entity)

    def retry(self, dead: bool = False) -> int:
        """Put the entity's waiting (and, with `dead`, dead) jobs back to run now."""
        return queue.retry(self.parts.db, self.entity, dead)

    def retry_job(self, job_id: int) -> None:
        queue.retry_job(self.parts.db, self.entity, job_id)

    def llm_usage_today(self) -> dict[str, int]:
        return budget.usage_today(self.parts.db, self.entity)

    def llm_budget_spent(self) -> str | None:
        """Why the entity's LLM work waits for tomorrow, or None."""
        return budget.budget_spent(self.parts.db, self.parts.settings, self.entity)

    # --- the shared stores it is a member of ---

    def stores(self) -> list[Store]:
        return stores.of_member(self.parts.db, self.entity)

    def shared(self, store: str | None = None) -> SharedStore:
        """`store` as this entity may act on it (its only store when it names none); a
        store it is no member of is NotFound, as one that does not exist."""
        return SharedStore(self.parts.index, stores.access(self.parts.db, self.entity, store))

    # --- its session transcripts (the OpenClaw profile's paths) ---

    def transcript_places(self, event_uids: list[str]) -> dict[str, Location]:
        return transcripts.locate(self.parts.db, self.entity, event_uids)

    def read(self, relative: str, start: int = 1, count: int | None = None) -> FileLines:
        """Lines of a file in the entity's home, or of a day of its session transcripts
        (a path under `sessions/`, as `transcript_places` gives it)."""
        if transcripts.is_transcript(relative):
            return transcripts.read(self.parts.db, self.entity, relative, start, count)
        return self.files.read(relative, start, count)

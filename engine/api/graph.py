"""Layer 3, rich texture: the entity's knowledge graph."""

from __future__ import annotations

from engine.api.part import Part
from engine.graph import curator, texture
from engine.graph.curator import Duplicates, Merged
from engine.graph.texture import (
    Accepted,
    Deleted,
    Exploration,
    ExploreQuery,
    Facts,
    FactsQuery,
    NoteIn,
    SearchQuery,
    SearchResult,
    Stats,
    Timeline,
    TimelineQuery,
    TripletIn,
)


class Texture(Part):
    @property
    def backend(self) -> str:
        """Which graph the server runs ("none" when it runs without one)."""
        return self.parts.graph.backend if self.parts.graph is not None else "none"

    def search(self, query: SearchQuery) -> SearchResult:
        return texture.search(self.parts.graph, self.parts.db, self.entity, query)

    def facts(self, query: FactsQuery) -> Facts:
        return texture.facts(self.parts.graph, self.parts.db, self.entity, query)

    def explore(self, query: ExploreQuery) -> Exploration:
        return texture.explore(self.parts.graph, self.parts.db, self.entity, query)

    def timeline(self, query: TimelineQuery) -> Timeline:
        return texture.timeline(self.parts.graph, self.parts.db, self.entity, query)

    def stats(self) -> Stats:
        return texture.stats(self.parts.graph, self.parts.db, self.parts.settings, self.entity)

    def waiting(self) -> str | None:
        """Why the graph waits instead of growing, or None."""
        return texture.waiting(self.parts.graph, self.parts.db, self.parts.settings, self.entity)

    def add(self, note: NoteIn) -> Accepted:
        """Learn from a piece of text: stored as an event, an episode of its own."""
        return texture.add(self.parts.capture, self.entity, note)

    def add_triplet(self, triplet: TripletIn) -> Accepted:
        return texture.add_triplet(self.parts.capture, self.entity, triplet)

    def delete(self, uuid: str, kinds: tuple[str, ...] = ("fact", "entity", "episode")) -> Deleted:
        return texture.delete(self.parts.graph, self.parts.db, self.entity, uuid, kinds)

    def duplicates(self) -> Duplicates:
        return curator.duplicates(self.parts.graph, self.parts.settings, self.entity)

    def merge_duplicates(self, dry_run: bool = True) -> Merged:
        return curator.merge_duplicates(
            self.parts.graph, self.parts.settings, self.entity, dry_run=dry_run
        )

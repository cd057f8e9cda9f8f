"""Layer 4, crystallization: the entity's chained crystals and its message summaries."""

from __future__ import annotations

from pathlib import Path

from engine.api.part import Part
from engine.crystal import crystals, summaries, summarize
from engine.crystal.crystals import Crystal, CrystalIn, Crystals, CurrentQuery
from engine.crystal.summaries import (
    RecentQuery,
    SinceQuery,
    SinceSummaryQuery,
    Summaries,
    Summary,
    SummaryHits,
    SummaryIn,
    SummarySearch,
    SummaryStats,
    TurnsSince,
    TurnsSinceSummary,
)
from engine.crystal.summarize import Summarized, SummarizeRequest
from engine.search import homes


class CrystalChain(Part):
    @property
    def _home(self) -> Path:
        return homes.home_for(self.parts.settings, self.entity).root

    def crystallize(self, crystal: CrystalIn) -> Crystal:
        """Write the next crystal; past the settings' `crystal_keep`, the oldest is archived."""
        return crystals.crystallize(self._home, crystal, keep=self.parts.settings.crystal_keep)

    def current(self, ask: CurrentQuery) -> Crystals:
        return crystals.current(self._home, ask)

    def list(self) -> Crystals:
        return crystals.list_all(self._home)

    def delete_latest(self) -> Crystal:
        return crystals.delete_latest(self._home, keep=self.parts.settings.crystal_keep)


class SummaryLog(Part):
    def recent(self, ask: RecentQuery) -> Summaries:
        return summaries.recent(self.parts.db, self.entity, ask)

    def search(self, ask: SummarySearch) -> SummaryHits:
        return summaries.search(self.parts.db, self.entity, ask)

    def stats(self) -> SummaryStats:
        return summaries.stats(self.parts.db, self.parts.settings, self.entity)

    def store(self, summary: SummaryIn) -> Summary:
        return summaries.store(self.parts.db, self.entity, summary)

    def turns_since(self, ask: SinceQuery) -> TurnsSince:
        return summaries.turns_since(self.parts.db, self.entity, ask)

    def turns_since_summary(self, ask: SinceSummaryQuery) -> TurnsSinceSummary:
        return summaries.turns_since_summary(self.parts.db, self.parts.settings, self.entity, ask)

    def summarize(self, request: SummarizeRequest) -> Summarized:
        """Write summaries of the unsummarized turns now, with the LLM."""
        return summarize.summarize(self.parts.db, self.parts.settings, self.entity, request)

"""Recall's audit: drawing past recalls to judge, the judgments, and precision from them."""

from __future__ import annotations

from engine.api.part import Part
from engine.recall import audit
from engine.recall.audit import (
    Drawn,
    DrawQuery,
    Judgment,
    JudgmentIn,
    JudgmentRef,
    Precision,
    PrecisionQuery,
)


class Audit(Part):
    DRAW_DEFAULT = audit.DRAW_DEFAULT
    """How many logged recalls a draw takes when it names no number."""

    def draw(self, ask: DrawQuery) -> Drawn:
        return audit.draw(self.parts.db, self.entity, ask)

    def judge(self, judgment: JudgmentIn, face: str) -> Judgment:
        return audit.judge(self.parts.db, self.entity, judgment, face)

    def unjudge(self, ref: JudgmentRef) -> bool:
        return audit.unjudge(self.parts.db, self.entity, ref)

    def precision(self, ask: PrecisionQuery) -> Precision:
        return audit.precision(self.parts.db, self.entity, ask)

    @staticmethod
    def new_seed() -> int:
        """A seed for a new draw (the web page's 'another sample')."""
        return audit.new_seed()

"""PPS_SEARCH_TURN_CONTEXT decides how many neighbouring turns each side rank a turn by
its words (its BM25 context): the setting reaches the index, not a constant. Turns the
index lacks are admitted later with the same context."""

from __future__ import annotations

import pytest

from engine.capture import entities
from engine.capture import events as capture
from engine.kernel.config import Settings
from engine.runtime import CAPTURE_LISTENERS
from engine.search import turns
from engine.search.index import Index
from engine.store.db import Database


@pytest.mark.parametrize("reach", [0, 1, 3])
def test_a_turns_context_holds_the_configured_neighbours(tmp_path, reach):
    settings = Settings(data_dir=tmp_path / "data", search_turn_context=reach)
    db = Database.open(settings)
    entities.create(db, "lyra")
    said = [f"line number {n} about the garden" for n in range(9)]
    events = capture.parse_events(
        [{"channel": "terminal", "content": text, "session_id": "s"} for text in said],
        max_batch=50,
        max_content_bytes=10_000,
    )
    ids = [r.id for r in capture.Capture(db, CAPTURE_LISTENERS).record("lyra", events)]
    turns.add_context(Index(settings, db), "lyra", ids)
    context = db.conn.execute(
        "SELECT context FROM search_chunks WHERE event_id = ?", (ids[4],)
    ).fetchone()[0]
    neighbours = [n for n in range(9) if n != 4 and f"line number {n} " in (context or "")]
    assert neighbours == [n for n in range(4 - reach, 5 + reach) if n != 4]
    db.close()


def test_turns_the_index_lacks_are_admitted_once_with_their_context(tmp_path, monkeypatch):
    """Turns stored while nothing indexed them (an import, a dropped index), after turns
    the index holds: the backfill admits each once, with its neighbours, however many
    pages of turns it reads (two a page here)."""
    settings = Settings(data_dir=tmp_path / "data", search_turn_context=1)
    db = Database.open(settings)
    entities.create(db, "lyra")

    def store(texts: list[str], listeners) -> list[int]:
        events = capture.parse_events(
            [{"channel": "terminal", "content": text, "session_id": "s"} for text in texts],
            max_batch=50,
            max_content_bytes=10_000,
        )
        return [r.id for r in capture.Capture(db, listeners).record("lyra", events)]

    indexed = store([f"indexed turn {n}" for n in range(3)], CAPTURE_LISTENERS)
    lacking = store([f"lacking turn {n}" for n in range(5)], ())
    monkeypatch.setattr(turns, "_BACKFILL_PAGE", 2)
    index = Index(settings, db)
    assert turns.backfill(index, "lyra") == 5
    assert turns.backfill(index, "lyra") == 0
    rows = dict(db.conn.execute("SELECT event_id, context FROM search_chunks").fetchall())
    assert sorted(rows) == sorted(indexed + lacking)
    assert "indexed turn 2" in rows[lacking[0]] and "lacking turn 1" in rows[lacking[0]]
    assert "lacking turn 0" in rows[indexed[2]]  # its new neighbour
    db.close()

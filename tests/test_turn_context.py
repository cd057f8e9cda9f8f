"""PPS_SEARCH_TURN_CONTEXT decides how many neighbouring turns each side rank a turn by
its words (its BM25 context): the setting reaches the index, not a constant."""

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
    ids = [r.id for r in capture.record(db, "lyra", events, CAPTURE_LISTENERS)]
    turns.add_context(Index(settings, db), "lyra", ids)
    context = db.conn.execute(
        "SELECT context FROM search_chunks WHERE event_id = ?", (ids[4],)
    ).fetchone()[0]
    neighbours = [n for n in range(9) if n != 4 and f"line number {n} " in (context or "")]
    assert neighbours == [n for n in range(4 - reach, 5 + reach) if n != 4]
    db.close()

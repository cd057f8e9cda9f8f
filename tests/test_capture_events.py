"""Capture tells its listeners what a batch stored by handing them the stored events
(engine.capture.events.Captured), inside the batch's transaction: no listener reads them
back, and capture's own reads of `events` do not grow with the batch."""

from __future__ import annotations

import re

import pytest

from engine.capture import entities
from engine.capture.events import Capture, Captured, EventIn
from engine.kernel.config import Settings
from engine.runtime import CAPTURE_LISTENERS
from engine.store.db import Database

READS_EVENTS = re.compile(r"\b(FROM|JOIN)\s+events\b", re.IGNORECASE)


@pytest.fixture
def db(tmp_path):
    db = Database.open(Settings(data_dir=tmp_path / "data", graph_backend="none"))
    entities.create(db, "lyra")
    yield db
    db.close()


def turns(size: int, start: int = 0) -> list[EventIn]:
    """A conversation's turns as the hooks send them: each with its client's uid."""
    return [
        EventIn(
            event_uid=f"turn-{i}",
            channel="terminal",
            session_id="s",
            author="jeff" if i % 2 == 0 else "lyra",
            role="user" if i % 2 == 0 else "assistant",
            content=f"turn {i} about the garden shed and the tomato plants",
        )
        for i in range(start, start + size)
    ]


def count(db: Database, table: str) -> int:
    return db.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


@pytest.mark.parametrize("size", [1, 50])
def test_no_listener_reads_the_stored_events_back(db, size):
    """Every statement the batch runs is traced; a first listener marks where the
    runtime's listeners start. From there on none selects from `events`; before it,
    capture itself looks `events` up at most once (for edits stored before the batch's
    messages), however many events the batch holds."""
    Capture(db, CAPTURE_LISTENERS).record("lyra", turns(20, start=1000))  # some history
    said: list[str] = []
    started: list[int] = []
    listeners = [lambda batch: started.append(len(said)), *CAPTURE_LISTENERS]
    db.conn.set_trace_callback(said.append)
    try:
        Capture(db, listeners).record("lyra", turns(size))
    finally:
        db.conn.set_trace_callback(None)
    assert started, "the listeners were told of the batch"
    reads = [s for s in said if READS_EVENTS.search(s) and not s.lstrip().startswith("INSERT")]
    by_listeners = [s for s in said[started[0] :] if s in reads]
    assert by_listeners == []
    assert len(reads) <= 1, reads
    # The listeners did their work from what they were handed: every turn is searchable
    # and waits in its episode window.
    assert count(db, "search_chunks") == size + 20
    assert count(db, "graph_pending") == size + 20


def test_listeners_are_handed_the_new_events_as_capture_marked_them(db):
    stores = Capture(db, CAPTURE_LISTENERS)
    [blue] = stores.record("lyra", [EventIn(event_uid="m0", channel="discord", content="blue")])
    stores.record(
        "lyra",
        [
            EventIn(
                event_uid="m9:delete",
                channel="discord",
                event_type="delete",
                content="message m9 was deleted",
                metadata={"deletes": "m9"},
            )
        ],
    )
    told: list[tuple[Captured, bool]] = []
    Capture(db, [*CAPTURE_LISTENERS, lambda b: told.append((b, b.conn.in_transaction))]).record(
        "lyra",
        [
            EventIn(event_uid="m0", channel="discord", content="blue"),  # a duplicate
            EventIn(
                event_uid="m0:edit",
                channel="discord",
                event_type="edit",
                content="green",
                metadata={"replaces": "m0"},
            ),
            EventIn(event_uid="m9", channel="discord", content="sent after its deletion"),
        ],
    )
    [(batch, in_transaction)] = told
    assert [(e.event_uid, e.replaced_by, e.deleted_at is not None) for e in batch.events] == [
        ("m0:edit", None, False),
        ("m9", None, True),
    ]
    assert batch.entity == "lyra" and in_transaction
    assert blue.id in batch.superseded
    assert [e.event_uid for e in batch.turns()] == ["m0:edit"]
    indexed = db.conn.execute(
        "SELECT e.event_uid FROM search_chunks c JOIN events e ON e.id = c.event_id"
        " WHERE e.channel = 'discord'"
    ).fetchall()
    assert [row[0] for row in indexed] == ["m0:edit"]


def test_a_batch_and_what_its_listeners_write_commit_together_or_not_at_all(db):
    told: list[str] = []

    def fails(batch: Captured) -> None:
        raise RuntimeError("a listener failed")

    with pytest.raises(RuntimeError):
        Capture(db, [*CAPTURE_LISTENERS, fails]).record("lyra", turns(3))
    assert count(db, "events") == 0 and count(db, "search_chunks") == 0
    stores = Capture(db, [lambda batch: told.append("standing")])
    stores.record("lyra", turns(3), also=[lambda batch: told.append("also")])
    stores.record("lyra", turns(3), also=[lambda batch: told.append("again")])  # duplicates
    assert told == ["standing", "also"]
    assert count(db, "events") == 3

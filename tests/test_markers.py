"""Markers (a session started, a context compacted, a message deleted) are events, not
turns: raw capture keeps them, the turn index never holds them, and a database that
indexed them before (migration 0007) loses those rows and keeps everything else."""

from __future__ import annotations

from engine.capture import entities
from engine.capture.markers import MARKER_TYPES
from engine.kernel.config import Settings
from engine.store.db import Database
from tests.fixtures_ingest import all_events

BEFORE = 6  # the version before 0007_markers


def test_markers_are_stored_but_not_searchable_as_turns(client):
    events = [
        {"channel": "terminal", "event_type": kind, "content": f"pelican {kind} marker"}
        for kind in MARKER_TYPES
    ]
    events.append({"channel": "terminal", "role": "user", "content": "a pelican on the roof"})
    assert client.post("/v1/events", json=events).status_code == 200
    assert len(all_events(client)) == len(MARKER_TYPES) + 1  # raw capture keeps them all
    raw = client.get("/v1/events/search", params={"q": "pelican"}).json()["results"]
    assert {hit["event"]["event_type"] for hit in raw} == {*MARKER_TYPES, "message"}
    found = client.post("/v1/search", json={"query": "pelican", "tiers": "longform"}).json()
    assert [r["text"] for r in found["results"]] == ["a pelican on the roof"]


def test_migration_drops_the_markers_already_indexed_and_keeps_the_turns(tmp_path):
    db = Database(tmp_path / "pps.sqlite3")
    assert db.migrate(upto=BEFORE) == BEFORE
    entities.create(db, "lyra")
    kinds = ["message", *MARKER_TYPES, "edit"]
    with db.write() as conn:
        for n, kind in enumerate(kinds):
            event_id = conn.execute(
                "INSERT INTO events (entity, event_uid, channel, event_type, content,"
                " created_at, received_at) VALUES ('lyra', ?, 'terminal', ?, ?, ?, ?)"
                " RETURNING id",
                (f"u{n}", kind, f"heron {kind}", f"2026-01-04T12:0{n}:00Z", "2026-01-04T12:00Z"),
            ).fetchone()[0]
            chunk_id = conn.execute(  # as capture indexed every event before 0007
                "INSERT INTO search_chunks (entity, tier, kind, event_id, content_hash,"
                " embed_hash, body) VALUES ('lyra', 'longform', 'turn', ?, ?, ?, ?) RETURNING id",
                (event_id, f"c{n}", f"e{n}", f"heron {kind}"),
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO search_vectors (chunk_id, entity, model, vector)"
                " VALUES (?, 'lyra', 'm', x'00000000')",
                (chunk_id,),
            )
        conn.execute("INSERT INTO search_generations (entity, generation) VALUES ('lyra', 3)")

    db.migrate()
    bodies = [r[0] for r in db.conn.execute("SELECT body FROM search_chunks ORDER BY id")]
    assert bodies == ["heron message", "heron edit"]
    assert db.conn.execute("SELECT COUNT(*) FROM search_vectors").fetchone()[0] == 2
    fts = db.conn.execute("SELECT COUNT(*) FROM search_fts WHERE search_fts MATCH 'heron'")
    assert fts.fetchone()[0] == 2
    assert db.conn.execute("SELECT generation FROM search_generations").fetchone()[0] == 4
    assert db.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == len(kinds)


def test_reindex_does_not_index_markers(tmp_path):
    """`pps reindex` admits every event without a row: markers stay without one (and it
    ends)."""
    from engine.search import turns
    from engine.search.index import Index

    settings = Settings(data_dir=tmp_path / "data", graph_backend="none")
    db = Database.open(settings)
    try:
        entities.create(db, "lyra")
        with db.write() as conn:
            for n, kind in enumerate(["message", *MARKER_TYPES]):
                conn.execute(
                    "INSERT INTO events (entity, event_uid, channel, event_type, content,"
                    " created_at, received_at) VALUES ('lyra', ?, 'terminal', ?, 'x', ?, ?)",
                    (f"u{n}", kind, "2026-01-04T12:00:00Z", "2026-01-04T12:00:00Z"),
                )
        assert turns.backfill(Index(settings, db), "lyra") == 1
        assert db.conn.execute("SELECT COUNT(*) FROM search_chunks").fetchone()[0] == 1
    finally:
        db.close()


def test_the_unsummarized_count_is_of_one_moment_while_markers_arrive(tmp_path):
    """The count reads the events, the summaries' ranges and the markers: all of one
    state, or a marker stored between two of the reads is taken off turns it never
    counted (a resumed session's recall said 1 turn for 2, now and then)."""
    import threading

    from engine.capture import events as capture
    from engine.crystal import summaries
    from engine.runtime import CAPTURE_LISTENERS

    db = Database.open(Settings(data_dir=tmp_path / "data"))
    entities.create(db, "lyra")

    def store(*events) -> None:
        parsed = capture.parse_events(list(events), max_batch=10, max_content_bytes=10_000)
        capture.Capture(db, CAPTURE_LISTENERS).record("lyra", parsed)

    store(*({"channel": "terminal", "author": "Jeff", "content": f"turn {n}"} for n in (1, 2)))
    stop, counts = threading.Event(), []

    def markers() -> None:
        while not stop.is_set():
            store({"channel": "terminal", "event_type": "session_start", "content": "started"})

    writer = threading.Thread(target=markers)
    writer.start()
    try:
        for _ in range(5000):
            counts.append(summaries.unsummarized_count(db, "lyra"))
    finally:
        stop.set()
        writer.join(30)
    assert set(counts) == {2}

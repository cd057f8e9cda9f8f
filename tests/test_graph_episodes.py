"""Turns become episodes by session window: decided once, recorded with the events they
cover, one graph job each, in the same transaction; the same events always make the same
episode uuid."""

from __future__ import annotations

import pytest

from engine.capture import entities
from engine.capture import events as capture
from engine.graph import episodes
from engine.graph.episodes import Window
from engine.kernel.config import Settings
from engine.runtime import CAPTURE_LISTENERS
from engine.store import queue
from engine.store.db import Database
from tests.conftest import Clock


@pytest.fixture
def db(tmp_path):
    db = Database.open(Settings(data_dir=tmp_path / "data"))
    entities.create(db, "lyra")
    entities.create(db, "nexus")
    yield db
    db.close()


def record(db, entity="lyra", **fields):
    event = {"channel": "terminal", "author": "jeff", "content": "hello there", **fields}
    parsed = capture.parse_events([event], max_batch=10, max_content_bytes=100_000)
    return capture.Capture(db, CAPTURE_LISTENERS).record(entity, parsed)[0].event_uid


def covered(db, uuid):
    return [
        row[0]
        for row in db.conn.execute(
            "SELECT e.event_uid FROM episode_events ee JOIN events e ON e.id = ee.event_id"
            " WHERE ee.episode_uuid = ? ORDER BY ee.position",
            (uuid,),
        )
    ]


def graph_jobs(db):
    rows = db.conn.execute("SELECT entity, key, payload FROM jobs WHERE kind = 'graph_episode'")
    return [tuple(r) for r in rows]


LONG_IDLE = Window(max_turns=3, max_chars=10_000, idle_s=3600)


def test_a_window_closes_when_full_and_the_rest_waits(db):
    uids = [record(db, event_uid=f"t{n}", session_id="s1") for n in range(7)]
    closed = episodes.close_windows(db, LONG_IDLE)
    assert [covered(db, u) for u in closed] == [uids[0:3], uids[3:6]]
    assert episodes.close_windows(db, LONG_IDLE) == []  # the 7th turn waits for more
    assert len(graph_jobs(db)) == 2
    rest = episodes.close_windows(db, LONG_IDLE, force=True)
    assert [covered(db, u) for u in rest] == [uids[6:]]


def test_markers_are_no_part_of_an_episode(db):
    start = record(db, event_uid="m1", session_id="s1", event_type="session_start")
    turns = [record(db, event_uid=f"t{n}", session_id="s1") for n in range(3)]
    [closed] = episodes.close_windows(db, LONG_IDLE)
    assert covered(db, closed) == turns and start not in covered(db, closed)


def test_an_idle_window_closes(db):
    uids = [record(db, event_uid=f"t{n}") for n in range(2)]  # well within the gap
    clock = Clock()  # now, or just after the turns arrived
    quick = Window(max_turns=20, max_chars=10_000, idle_s=0.5, clock=clock)
    assert episodes.close_windows(db, quick) == []
    clock.advance(0.6)
    (closed,) = episodes.close_windows(db, quick)
    assert covered(db, closed) == uids


def test_windows_are_per_session_channel_and_entity(db):
    a = record(db, event_uid="a", session_id="s1")
    b = record(db, event_uid="b", session_id="s2")
    c = record(db, event_uid="c", channel="discord")
    d = record(db, entity="nexus", event_uid="a", session_id="s1")
    closed = episodes.close_windows(db, LONG_IDLE, force=True)
    assert sorted(covered(db, u) for u in closed) == sorted([[a], [b], [c], [d]])
    owners = {
        db.conn.execute("SELECT entity FROM episodes WHERE uuid = ?", (u,)).fetchone()[0]
        for u in closed
    }
    assert owners == {"lyra", "nexus"}
    assert episodes.episode_uuid("lyra", ["a"]) != episodes.episode_uuid("nexus", ["a"])


def test_characters_and_time_gaps_cut_episodes(db):
    window = Window(max_turns=20, max_chars=300, idle_s=600)
    big = [record(db, event_uid=f"big{n}", content="x" * 120) for n in range(3)]
    early = record(db, event_uid="early", channel="discord", created_at="2026-01-01T10:00:00Z")
    late = record(db, event_uid="late", channel="discord", created_at="2026-01-01T12:00:00Z")
    closed = episodes.close_windows(db, window, force=True)
    groups = sorted(covered(db, u) for u in closed)
    assert [big[0], big[1]] in groups and [big[2]] in groups  # 2 x 131 chars fit in 300
    assert [early] in groups and [late] in groups  # two hours apart: two episodes


def test_the_uuid_comes_from_the_entity_and_the_events(db):
    uids = [record(db, event_uid=f"t{n}") for n in range(2)]
    (closed,) = episodes.close_windows(db, LONG_IDLE, force=True)
    assert closed == episodes.episode_uuid("lyra", uids)
    assert graph_jobs(db) == [("lyra", closed, f'{{"episode": "{closed}"}}')]


def test_duplicates_and_closed_windows_never_regroup(db):
    record(db, event_uid="t0")
    (first,) = episodes.close_windows(db, LONG_IDLE, force=True)
    record(db, event_uid="t0")  # a resent event is not new: it joins nothing
    assert episodes.close_windows(db, LONG_IDLE, force=True) == []
    assert db.conn.execute("SELECT COUNT(*) FROM episode_events").fetchone()[0] == 1
    assert covered(db, first) == ["t0"]


def test_notes_and_triplets_are_episodes_of_their_own_at_once(db):
    record(db, event_uid="turn", channel="texture")  # a plain message on that channel waits
    note = record(db, event_uid="n1", channel="texture", event_type="note")
    trip = record(
        db,
        event_uid="t1",
        channel="texture",
        event_type="triplet",
        content="Jeff works at Acme.",
        metadata={"source": "Jeff", "relationship": "WORKS_AT", "target": "Acme"},
    )
    closed = episodes.close_windows(db, LONG_IDLE)
    assert sorted(covered(db, u) for u in closed) == [[note], [trip]]
    loaded = episodes.load(db, episodes.episode_uuid("lyra", [trip]), max_chars=1000)
    assert loaded.kind == "triplet"
    assert loaded.triplet == {
        "source": "Jeff",
        "relationship": "WORKS_AT",
        "target": "Acme",
        "fact": "Jeff works at Acme.",
    }


def test_a_failed_close_changes_nothing(db, monkeypatch):
    record(db, event_uid="t0")

    def broken(*args):
        raise RuntimeError("disk full")

    monkeypatch.setattr(queue, "enqueue", broken)
    with pytest.raises(RuntimeError):
        episodes.close_windows(db, LONG_IDLE, force=True)
    assert db.conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] == 0
    assert db.conn.execute("SELECT COUNT(*) FROM graph_pending").fetchone()[0] == 1


def test_an_episode_renders_speakers_and_cuts_long_turns(db):
    record(db, event_uid="a", author="jeff", content="short")
    record(db, event_uid="b", author=None, role="assistant", content="y" * 500)
    (uuid,) = episodes.close_windows(db, LONG_IDLE, force=True)
    loaded = episodes.load(db, uuid, max_chars=200)
    first, second = loaded.body.split("\n")
    assert first == "jeff: short"
    assert second.startswith("assistant: yyy") and second.endswith("[cut 311 characters]")
    assert loaded.truncated and loaded.event_uids == ["a", "b"]


def test_events_stored_before_the_graph_existed_are_grouped(tmp_path):
    db = Database(tmp_path / "old.sqlite3")
    db.migrate(upto=4)
    entities.create(db, "lyra")
    with db.write() as conn:
        conn.execute(
            "INSERT INTO events (entity, event_uid, channel, event_type, content, session_id,"
            " created_at, received_at) VALUES ('lyra', 'old', 'terminal', 'message', 'hi',"
            " NULL, '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')"
        )
    db.migrate()
    (uuid,) = episodes.close_windows(db, LONG_IDLE)  # received long ago: idle
    assert covered(db, uuid) == ["old"]


def test_trace_only_answers_for_the_entity(db):
    record(db, event_uid="a")
    (uuid,) = episodes.close_windows(db, LONG_IDLE, force=True)
    assert episodes.trace(db, "lyra", [uuid]) == {uuid: ["a"]}
    assert episodes.trace(db, "nexus", [uuid]) == {}

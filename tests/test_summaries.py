"""Layer 4 summaries: storing one marks its turns summarized; the rest stay visible."""

from __future__ import annotations

import random

from engine.capture.markers import MARKER_TYPES as MARKERS
from engine.capture.markers import turns_only
from engine.crystal import summaries
from engine.kernel.config import Settings


def _turns(client, n, channel="terminal", start=0):
    events = [
        {
            "event_uid": f"{channel}-{start + i}",
            "channel": channel,
            "content": f"{channel} turn {start + i}",
            "created_at": f"2026-01-04T12:{start + i:02}:00Z",
        }
        for i in range(n)
    ]
    return [ack["id"] for ack in client.post("/v1/events", json=events).json()["events"]]


def test_summary_marks_its_range_and_leaves_the_rest(client):
    ids = _turns(client, 10)
    assert client.get("/v1/summaries/stats").json()["unsummarized"] == 10
    stored = client.post(
        "/v1/summaries",
        json={"summary_text": "We talked about the robe.", "start_id": ids[0], "end_id": ids[5]},
    )
    assert stored.status_code == 200, stored.text
    summary = stored.json()
    assert summary["event_count"] == 6
    assert summary["first_at"] == "2026-01-04T12:00:00.000000Z"
    assert summary["last_at"] == "2026-01-04T12:05:00.000000Z"

    since = client.get("/v1/turns/since-summary").json()
    assert [t["content"] for t in since["turns"]] == [f"terminal turn {i}" for i in range(6, 10)]
    assert since["unsummarized"] == 4 and since["warning"] is None
    newest_first = client.get("/v1/turns/since-summary", params={"oldest_first": False, "limit": 2})
    assert [t["content"] for t in newest_first.json()["turns"]] == [
        "terminal turn 9",
        "terminal turn 8",
    ]
    stats = client.get("/v1/summaries/stats").json()
    assert stats["summaries"] == 1 and stats["summarized_events"] == 6
    assert stats["by_type"] == {"message": 1}
    assert stats["oldest_unsummarized_at"] == "2026-01-04T12:06:00.000000Z"


def test_channel_scoped_summary_covers_only_its_channels(client):
    terminal = _turns(client, 3, "terminal")
    _turns(client, 3, "discord", start=3)
    client.post(
        "/v1/summaries",
        json={
            "summary_text": "terminal only",
            "start_id": terminal[0],
            "end_id": terminal[-1] + 3,
            "channels": ["terminal"],
        },
    )
    left = client.get("/v1/turns/since-summary").json()
    assert {t["channel"] for t in left["turns"]} == {"discord"} and left["unsummarized"] == 3
    discord_only = client.get("/v1/turns/since-summary", params={"channel": "terminal"})
    assert discord_only.json()["unsummarized"] == 0


def test_warning_above_a_hundred_unsummarized(client):
    events = [{"channel": "discord", "content": f"m{i}"} for i in range(101)]
    client.post("/v1/events", json=events)
    since = client.get("/v1/turns/since-summary", params={"limit": 5}).json()
    assert since["unsummarized"] == 101 and len(since["turns"]) == 5
    assert "101 unsummarized" in since["warning"]


def test_recent_search_and_turns_since(client):
    ids = _turns(client, 6)
    for text, (a, b) in [("first the kitchen", (0, 1)), ("then the comfy robe", (2, 3))]:
        client.post(
            "/v1/summaries", json={"summary_text": text, "start_id": ids[a], "end_id": ids[b]}
        )
    recent = client.get("/v1/summaries", params={"limit": 5}).json()["summaries"]
    assert [s["summary_text"] for s in recent] == ["first the kitchen", "then the comfy robe"]
    hits = client.get("/v1/summaries/search", params={"query": "robe"}).json()["results"]
    assert [h["summary"]["summary_text"] for h in hits] == ["then the comfy robe"]
    since = client.get("/v1/turns/since", params={"timestamp": "2026-01-04T12:03:00Z"}).json()
    assert [t["content"] for t in since["turns"]] == [
        "terminal turn 3",
        "terminal turn 4",
        "terminal turn 5",
    ]
    assert [s["summary_text"] for s in since["summaries"]] == [
        "first the kitchen",
        "then the comfy robe",
    ]


def test_bad_summaries_are_refused_and_store_nothing(make_client):
    client, other = make_client(), make_client()
    ids = _turns(client, 3)
    foreign = _turns(other, 1)
    cases = [
        ({"summary_text": "", "start_id": ids[0], "end_id": ids[1]}, "summary_text"),
        ({"summary_text": "x", "start_id": ids[2], "end_id": ids[0]}, "body"),
        (
            {"summary_text": "x", "start_id": ids[0], "end_id": ids[1], "channels": ["NO!"]},
            "channels[0]",
        ),
        ({"start_id": ids[0], "end_id": ids[1]}, "summary_text"),
    ]
    for body, field in cases:
        response = client.post("/v1/summaries", json=body)
        assert response.status_code == 422, (body, response.text)
        assert field in [p["field"] for p in response.json()["problems"]], response.text
    assert client.get("/v1/summaries/stats").json()["summaries"] == 0
    # Ends that are not this entity's events: not there, as far as it can tell (404).
    for end in (foreign[0], 10**9):
        body = {"summary_text": "x", "start_id": ids[0], "end_id": end}
        response = client.post("/v1/summaries", json=body)
        assert response.status_code == 404, (body, response.text)
        assert [p["field"] for p in response.json()["problems"]] == ["end_id"]
    assert client.get("/v1/summaries/stats").json()["summaries"] == 0
    bad_time = client.get("/v1/turns/since", params={"timestamp": "someday"})
    assert bad_time.status_code == 422 and bad_time.json()["problems"][0]["field"] == "timestamp"


def test_summaries_are_per_entity(make_client):
    a, b = make_client(), make_client()
    ids = _turns(a, 2)
    a.post(
        "/v1/summaries", json={"summary_text": "private robe", "start_id": ids[0], "end_id": ids[1]}
    )
    assert b.get("/v1/summaries").json()["summaries"] == []
    assert b.get("/v1/summaries/search", params={"query": "robe"}).json()["results"] == []
    assert b.get("/v1/summaries/stats").json()["summaries"] == 0


def test_without_an_llm_summarize_returns_the_oldest_turns_by_id(client):
    ids = _turns(client, 3)
    # An import stores an old turn with a new id: a summary of ids[0]..ids[1] must not
    # cover it unseen, so the batch is the oldest by id, not by time.
    imported = client.post(
        "/v1/events",
        json=[{"channel": "discord", "content": "from 2001", "created_at": "2001-01-01T00:00:00Z"}],
    ).json()["events"][0]["id"]
    todo = client.post("/v1/summaries/summarize", json={"limit": 2}).json()
    assert todo["summarized"] is False and "call store_summary" in todo["message"]
    assert [t["id"] for t in todo["turns"]] == ids[:2]
    assert (todo["start_id"], todo["end_id"], todo["unsummarized"]) == (ids[0], ids[1], 4)
    client.post("/v1/summaries", json={"summary_text": "two", "start_id": ids[0], "end_id": ids[1]})
    assert [t["id"] for t in client.get("/v1/turns/since-summary").json()["turns"]] == [
        imported,
        ids[2],
    ]


def test_unsummarized_counts_agree_with_testing_every_event(server, make_client):
    """Overlapping summaries, summaries of some channels, another entity's events in
    between: the count per channel and overall, the turns listed since the last summary
    and the next batch to summarize are what checking each event against each summary
    gives."""
    rng = random.Random(11)
    mine, other = make_client(), make_client()
    channels = ["terminal", "discord", "heartbeat"]
    ids = []
    for round_ in range(6):
        for channel in channels:
            ids += _turns(mine, rng.randint(3, 8), channel, start=round_ * 10)
            _turns(other, 2, channel, start=round_ * 10)
    for n in range(12):
        low, high = sorted(rng.sample(ids, 2))
        body = {"summary_text": f"summary {n}", "start_id": low, "end_id": high}
        if rng.random() < 0.5:
            body["channels"] = rng.sample(channels, rng.randint(1, 2))
        assert mine.post("/v1/summaries", json=body).status_code == 200

    for channel in channels:  # markers in between, which are never counted
        mine.post(
            "/v1/events",
            json=[{"channel": channel, "event_type": kind, "content": kind} for kind in MARKERS],
        )

    _agree_with_testing_every_event(server, mine.entity, channels)
    assert 0 < summaries.unsummarized_count(server.db, mine.entity) < len(ids)


def test_summaries_of_some_channels_leave_the_others_unsummarized(server, make_client):
    """Summaries of one channel, of two, and of every channel, over ranges that overlap
    and leave gaps: each channel's turns outside its own summaries stay unsummarized,
    counted, listed and batched as checking each event against each summary gives."""
    mine, other = make_client(), make_client()
    channels = ["terminal", "discord", "heartbeat"]
    ids = []
    for round_ in range(4):
        for channel in channels:
            ids += _turns(mine, 3, channel, start=round_ * 10)
        _turns(other, 2, "terminal", start=round_ * 10)
    for low, high, only in [
        (0, 20, ["terminal"]),
        (4, 12, ["discord", "heartbeat"]),
        (25, 27, ["heartbeat"]),
        (14, 16, None),
        (30, 33, None),
    ]:
        body = {"summary_text": f"{low}-{high}", "start_id": ids[low], "end_id": ids[high]}
        if only is not None:
            body["channels"] = only
        assert mine.post("/v1/summaries", json=body).status_code == 200
    _agree_with_testing_every_event(server, mine.entity, channels)
    count = summaries.unsummarized_count(server.db, mine.entity, "terminal")
    assert 0 < count < summaries.unsummarized_count(server.db, mine.entity, "discord")


def _agree_with_testing_every_event(server, entity, channels):
    """The count per channel and overall, the turns listed since the last summary (in
    either order, and a page of them) and the next batch are those that no summary
    covers, checked event by event in SQL."""
    db, settings = server.db, Settings(data_dir=server.data_dir)

    def unsummarized(channel, order):
        return [
            row[0]
            for row in db.conn.execute(
                "SELECT id FROM events e WHERE e.entity = ?"
                f" AND (? IS NULL OR e.channel = ?) AND {turns_only('e.')} AND NOT EXISTS"
                " (SELECT 1 FROM summaries s WHERE s.entity = e.entity"
                " AND e.id BETWEEN s.start_id AND s.end_id AND (s.channels IS NULL OR EXISTS"
                "  (SELECT 1 FROM json_each(s.channels) c WHERE c.value = e.channel)))"
                f" ORDER BY {order}",
                (entity, channel, channel),
            )
        ]

    for channel in [None, *channels, "nowhere"]:
        expected = unsummarized(channel, "created_at DESC, id DESC")
        assert summaries.unsummarized_count(db, entity, channel) == len(expected)
        for oldest_first, limit, offset in ((False, 1000, 0), (True, 1000, 0), (False, 7, 5)):
            ask = summaries.SinceSummaryQuery(
                channel=channel, oldest_first=oldest_first, limit=limit, offset=offset
            )
            page = summaries.turns_since_summary(db, settings, entity, ask).turns
            listed = expected[::-1] if oldest_first else expected
            assert [t.id for t in page] == listed[offset : offset + limit]
    by_id = unsummarized(None, "id")
    assert [t.id for t in summaries.next_batch(db, entity, 1000).turns] == by_id
    oldest = summaries.stats(db, settings, entity).oldest_unsummarized_at
    assert oldest == min(
        (t.created_at for t in summaries.next_batch(db, entity, 1000).turns), default=None
    )


def test_markers_are_never_unsummarized_turns(server, client):
    """A session's start and end, a compaction, a deletion: stored, but not turns to
    summarize, list or count."""
    ids = _turns(client, 2)
    markers = client.post(
        "/v1/events",
        json=[
            {"channel": "terminal", "event_type": kind, "content": f"{kind} happened"}
            for kind in MARKERS
        ],
    ).json()["events"]
    ids += _turns(client, 2, start=2)
    assert len(client.get("/v1/events").json()["events"]) == 4 + len(MARKERS)

    stats = client.get("/v1/summaries/stats").json()
    assert stats["unsummarized"] == 4 and stats["summarized_events"] == 0
    since = client.get("/v1/turns/since-summary").json()
    assert [t["id"] for t in since["turns"]] == ids and since["unsummarized"] == 4
    later = client.get("/v1/turns/since", params={"timestamp": "2026-01-04T12:00:00Z"}).json()
    assert [t["id"] for t in later["turns"]] == ids
    todo = client.post("/v1/summaries/summarize", json={"limit": 3}).json()
    assert [t["id"] for t in todo["turns"]] == ids[:3] and todo["unsummarized"] == 4

    # A summary written from those turns covers the markers between them without a
    # conflict: they were never turns it should have read.
    summary = summaries.SummaryIn(summary_text="two and one", start_id=ids[0], end_id=ids[2])
    summaries.store(server.db, client.entity, summary, written_from=ids[:3])
    assert markers[0]["id"] < ids[2]
    stats = client.get("/v1/summaries/stats").json()
    assert stats["unsummarized"] == 1 and stats["summarized_events"] == 3

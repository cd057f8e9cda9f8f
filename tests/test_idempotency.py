"""The same events sent again, in any batch shape, are stored once."""

from __future__ import annotations

import random


def _events(n):
    return [
        {"event_uid": f"msg-{i}", "channel": "discord", "author": "nexus", "content": f"line {i}"}
        for i in range(n)
    ]


def _count(client):
    total, cursor = 0, None
    while True:
        params = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        body = client.get("/v1/events", params=params).json()
        total += len(body["events"])
        cursor = body["next_cursor"]
        if not cursor:
            return total


def test_thousand_events_twice_in_different_shapes(client):
    events = _events(1000)
    first_ids = {}
    for start in range(0, 1000, 100):
        for ack in client.post("/v1/events", json=events[start : start + 100]).json()["events"]:
            assert not ack["duplicate"]
            first_ids[ack["event_uid"]] = ack["id"]

    shuffled = events[:]
    random.Random(7).shuffle(shuffled)
    position = 0
    for size in [1, 7, 250, 3, 500, 239]:  # adds up to 1000
        batch = shuffled[position : position + size]
        position += size
        answer = client.post("/v1/events", json=batch if size > 1 else batch[0]).json()
        assert answer["stored"] == 0
        for ack in answer["events"]:
            assert ack["duplicate"] and ack["id"] == first_ids[ack["event_uid"]]
    assert position == 1000
    assert _count(client) == 1000


def test_uids_are_per_entity(make_client):
    a, b = make_client(), make_client()
    event = {"event_uid": "shared-uid", "channel": "terminal", "content": "hello"}
    assert a.post("/v1/events", json=event).json()["stored"] == 1
    assert b.post("/v1/events", json=event).json()["stored"] == 1

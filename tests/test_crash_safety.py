"""Kill the server with SIGKILL mid-stream: nothing acknowledged is lost, and re-sending
what was not acknowledged leaves every event stored exactly once."""

from __future__ import annotations

import random
import sqlite3
import threading
import time

import httpx

from pps.process import ServerProcess
from tests.conftest import connect, create_entity

TOTAL = 5000


def _stream(client, events, acked, stop):
    """Send events in random batch shapes until done or the server goes away."""
    rng = random.Random(len(events))
    position = 0
    while position < len(events) and not stop.is_set():
        batch = events[position : position + rng.randint(1, 60)]
        try:
            response = client.post("/v1/events", json=batch if len(batch) > 1 else batch[0])
        except httpx.TransportError:
            return
        assert response.status_code == 200, response.text
        acked.update(ack["event_uid"] for ack in response.json()["events"])
        position += len(batch)


def _stored_uids(data_dir, entity):
    with sqlite3.connect(data_dir / "pps.sqlite3") as conn:
        rows = conn.execute("SELECT event_uid FROM events WHERE entity = ?", (entity,)).fetchall()
    return [row[0] for row in rows]


def test_sigkill_mid_stream_loses_nothing_acknowledged(tmp_path, processes):
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    events = [
        {"event_uid": f"crash-{i}", "channel": "terminal", "content": f"turn {i} {rng.random()}"}
        for i in range(TOTAL)
    ]
    server = ServerProcess(tmp_path / "data").start()
    token = create_entity(server.data_dir, "lyra")
    acked: set[str] = set()
    stop = threading.Event()
    kill_after = rng.randint(500, 4000)
    with connect(server, token) as client:
        sender = threading.Thread(target=_stream, args=(client, events, acked, stop))
        sender.start()
        while len(acked) < kill_after and sender.is_alive():
            time.sleep(0.001)
        server.kill()
        sender.join(timeout=30)
    stop.set()
    assert not sender.is_alive()
    assert len(acked) < TOTAL, f"the kill came too late to test anything (seed {seed})"

    server.start()  # the same data dir, after SIGKILL
    try:
        survived = set(_stored_uids(server.data_dir, "lyra"))
        assert acked <= survived, f"acknowledged events lost after SIGKILL (seed {seed})"

        with connect(server, token) as client:
            pending = [e for e in events if e["event_uid"] not in acked]
            for start in range(0, len(pending), 200):
                response = client.post("/v1/events", json=pending[start : start + 200])
                assert response.status_code == 200, response.text
    finally:
        server.stop()

    stored = _stored_uids(server.data_dir, "lyra")
    assert len(stored) == TOTAL, f"seed {seed}"
    assert set(stored) == {e["event_uid"] for e in events}

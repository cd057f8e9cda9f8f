"""A full disk (issue 15, items 3 and 4; issue 24, items 2 and 3): writes answer 503 with
Retry-After in the one error shape and change nothing, /health says the database cannot
write and which worker cannot record its outcomes, and everything recovers without a
restart once there is space again. Reads answer all along: what a read writes on the side
(the recall log) is dropped and counted, and background loops back off with one line in
the log, not a traceback a tick.

SQLite's `max_page_count` makes the database full exactly as a full disk does
(SQLITE_FULL, "database or disk is full"), without root or a small file system. The
pragma is per connection: `Full` sets it on every connection the app has open and on
each one it opens while the disk is "full".
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from engine.capture import entities, events
from engine.kernel import timestamps
from engine.search import turns
from engine.store import queue
from engine.store.db import Database
from engine.store.ticker import BACKOFF_CAP_S, Ticker
from tests.conftest import AppServer, connect, settings_env, wait_for
from tests.mcp_client import ToolFailed, call, session
from tests.test_ui import UI

UNLIMITED = 1_073_741_823
BIG = "many words of a long turn " * 4_000  # about 100 KiB: pages the database lacks


class Full:
    """While entered, the app's database cannot grow by a page: every connection it has
    open, and each one it opens meanwhile, has its size limit at its size."""

    def __init__(self, db: Database):
        self.db = db
        self._connect = db.connect

    def _connect_full(self) -> sqlite3.Connection:
        return _limit(self._connect(), 1)

    def __enter__(self) -> Full:
        self.db.connect = self._connect_full
        with self.db._all_lock:
            conns = list(self.db._all)
        for conn in conns:
            _limit(conn, 1)  # below the file's size: the limit becomes the size
        return self

    def __exit__(self, *exc) -> None:
        del self.db.connect
        with self.db._all_lock:
            conns = list(self.db._all)
        for conn in conns:
            _limit(conn, UNLIMITED)


def _limit(conn: sqlite3.Connection, pages: int) -> sqlite3.Connection:
    conn.execute(f"PRAGMA max_page_count = {pages}")
    return conn


@pytest.fixture
def server(tmp_path):
    # Workers poll and retry often, so the test sees them fail and recover quickly.
    fast = {"queue_poll_s": 0.05, "queue_lease_s": 1.0, "queue_backoff_initial_s": 0.1}
    # The recall log on: a recall then writes a row, the write a read makes on the side.
    with AppServer(tmp_path / "data", queue_backoff_max_s=0.5, recall_log=True, **fast) as app:
        yield app


def _doctor(server):
    """`pps doctor` beside the server, as a person runs it (exit status kept)."""
    from pps.cli import app

    umask = os.umask(0o077)  # the command sets it for its process; put it back after
    try:
        return CliRunner().invoke(
            app,
            ["doctor", "--data-dir", str(server.data_dir)],
            env=settings_env(**server.overrides),
        )
    finally:
        os.umask(umask)


def _events(prefix: str, n: int) -> list[dict]:
    return [
        {"event_uid": f"{prefix}-{i}", "channel": "terminal", "content": f"{BIG} {prefix} {i}"}
        for i in range(n)
    ]


def _stored(server, prefix: str) -> list[str]:
    return [
        r[0]
        for r in server.db.conn.execute(
            "SELECT event_uid FROM events WHERE event_uid LIKE ?", (f"{prefix}-%",)
        )
    ]


def test_writes_on_a_full_disk_answer_503_and_change_nothing(server, make_client):
    client = make_client()
    before = client.post("/v1/events", json=_events("before", 1))
    assert before.status_code == 200, before.text
    with Full(server.db):
        response = client.post("/v1/events", json=_events("full", 5))
        assert response.status_code == 503, response.text
        assert response.headers["Retry-After"].isdigit()
        body = response.json()
        assert body["error"] == "unavailable"
        [problem] = body["problems"]
        assert problem["field"] == "database"
        assert "full" in problem["problem"]
        assert _stored(server, "full") == []  # no partial batch

        health = client.get("/health").json()
        assert health["status"] == "degraded", health
        assert health["components"]["database"]["status"] == "full", health
        assert "full" in health["components"]["database"]["error"]
        doctor = _doctor(server)
        assert doctor.exit_code == 1, doctor.stdout
        lines = {line.split()[0]: line for line in doctor.stdout.splitlines()}
        assert " full " in lines["database"] and "database or disk is full" in lines["database"]
        assert "workers" in lines
        # Reads still answer.
        assert client.get("/v1/events", params={"limit": 1}).status_code == 200
        # The connection that failed is not left inside a transaction.
        again = client.post("/v1/events", json=_events("full", 5))
        assert again.status_code == 503, again.text

    # Space is back: /health recovers without a write, and the same request succeeds.
    wait_for(lambda: client.get("/health").json()["status"] == "ok", what="/health to recover")
    response = client.post("/v1/events", json=_events("full", 5))
    assert response.status_code == 200, response.text
    assert sorted(_stored(server, "full")) == [f"full-{i}" for i in range(5)]


def test_a_tool_on_a_full_disk_says_the_database_is_unavailable(server, make_client):
    client = make_client()
    token = client.headers["Authorization"].removeprefix("Bearer ")

    async def store(mcp):
        try:
            await call(mcp, "store_event", content=BIG, event_uid="mcp-full")
        except ToolFailed as exc:
            return str(exc)
        return None

    with Full(server.db):
        failed = session(f"{server.url}/mcp", token, store)
    assert failed is not None and "unavailable (database)" in failed and "full" in failed
    assert _stored(server, "mcp") == []


def test_workers_on_a_full_disk_keep_running_and_health_names_them(server, make_client):
    """The embedding worker cannot write its turns' contexts and vectors: it lives on,
    /health names it and its last error, and its jobs finish once there is space."""
    client = make_client()
    with server.db.write() as conn:  # the turns' job waits until the disk is full
        conn.execute(
            "INSERT INTO queue_pauses (entity, kind, reason, since) VALUES (?, ?, 'test', ?)",
            (client.entity, turns.JOB_KIND, timestamps.now()),
        )
    batch = [
        {"channel": "terminal", "content": f"turn {i} {BIG[:1000]}", "session_id": "s"}
        for i in range(30)
    ]
    assert client.post("/v1/events", json=batch).status_code == 200

    def reported():
        health = client.get("/health").json()
        return health["components"]["workers"]["status"] != "ok" and health

    with Full(server.db):
        queue.retry(server.db, client.entity)  # lifts the pause: no page needed
        health = wait_for(reported, what="/health to report the worker")
        assert health["status"] == "degraded"
        problem = health["components"]["workers"]["kinds"][turns.JOB_KIND]
        assert "full" in problem["error"], health
        assert problem["alive"] == problem["threads"]  # failing, not down

    def recovered():
        health = client.get("/health").json()
        counts = client.get("/v1/queue").json()["counts"]
        return health["status"] == "ok" and counts["done"] == 1

    # Each failure while the disk was full put the job's next attempt further off, and
    # its worker's next look at the queue (each backs off, the worker up to
    # BACKOFF_CAP_S); a busy machine fails them more times before /health is read: wait
    # until that attempt, the worker's longest pause, and as long as a quiet machine needs.
    [(due,)] = server.db.conn.execute(
        "SELECT next_attempt_at FROM jobs WHERE entity = ? AND kind = ?",
        (client.entity, turns.JOB_KIND),
    ).fetchall()
    ahead = 0.0 if due is None else -(queue._age(due, datetime.now(UTC)) or 0.0)
    bound = max(0.0, ahead) + BACKOFF_CAP_S + 30
    wait_for(recovered, timeout=bound, what="the job to finish and /health to recover")


@pytest.fixture
def small_disk(tmp_path):
    """A real 256 KiB file system (tmpfs), for a home on a disk that fills up."""
    point = tmp_path / "small"
    point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def test_home_files_on_a_full_disk_answer_503_and_leave_nothing(tmp_path, small_disk, processes):
    home = small_disk / "mira"
    home.mkdir()
    with AppServer(tmp_path / "data", entity_homes={"mira": home}) as server:
        client = connect(server, entities.create(server.db, "mira"))
        filler = small_disk / "filler"
        filler.write_bytes(b"x" * (240 * 1024))  # the disk has ~16 KiB left
        photo = {"title": "The garden in May", "content": "Roses and tulips. " * 2_000}
        for route, body in (("/v1/anchors", photo), ("/v1/crystals", {"content": BIG[:40_000]})):
            response = client.post(route, json=body)
            assert response.status_code == 503, response.text
            assert response.headers["Retry-After"].isdigit()
            [problem] = response.json()["problems"]
            assert problem["field"] == "disk" and "full" in problem["problem"]
        # Nothing half-written is left in the home, nor found by search.
        left = [p.name for p in home.rglob("*") if p.is_file() and p.name != ".lock"]
        assert left == []
        assert client.get("/v1/anchors").json()["anchors"] == []
        # Space is back: the same requests succeed.
        filler.unlink()
        assert client.post("/v1/anchors", json=photo).status_code == 201
        assert client.post("/v1/crystals", json={"content": BIG[:40_000]}).status_code == 200
        client.close()


def _drop_warnings(caplog, what: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "pps.db" and r.getMessage().startswith(what)]


def test_a_recall_on_a_full_disk_answers_and_its_log_row_is_dropped(server, make_client, caplog):
    """Issue 24, item 2: with PPS_RECALL_LOG on, the log row cannot be written; the recall
    answers 200 with its items all the same, /health and `pps doctor` count the drop, and
    the log says so once a minute, not once a recall."""
    caplog.set_level(logging.INFO)
    client = make_client()
    said = [  # long turns: a recall's log row then needs pages the database lacks
        {"channel": "discord", "author": "jeff", "content": f"the comfy robe {i} {BIG[:3000]}"}
        for i in range(5)
    ]
    assert client.post("/v1/events", json=said).status_code == 200
    ask = {"context": "where is the comfy robe?", "channel": "terminal"}

    def recall() -> None:
        response = client.post("/v1/recall", json=ask)
        assert response.status_code == 200, response.text
        assert any("comfy robe" in item["text"] for item in response.json()["items"])

    def dropped() -> dict:
        return client.get("/health").json()["components"]["database"]["dropped_writes"]

    with Full(server.db):
        assert client.post("/v1/events", json=_events("full", 1)).status_code == 503
        logged = 0
        while not dropped():  # the pages left free inside the database are used first
            recall()
            logged += 1
            assert logged <= 10, "the recall log never ran out of room"
        logged -= 1  # the recall that was dropped
        for _ in range(3):
            recall()
        database = client.get("/health").json()["components"]["database"]
        assert database["status"] == "full"
        assert database["dropped_writes"] == {"recall_log": 4}
        doctor = _doctor(server)
        [line] = [line for line in doctor.stdout.splitlines() if line.startswith("database")]
        assert "dropped_writes={'recall_log': 4}" in line, doctor.stdout
        [warning] = _drop_warnings(caplog, "recall_log")
        assert "full" in warning.getMessage() and warning.exc_info is None
    assert len(client.get("/v1/recall/log").json()["entries"]) == logged

    # Space is back: the next recall is logged again; the count stays as it was.
    wait_for(lambda: client.get("/health").json()["status"] == "ok", what="/health to recover")
    recall()
    entries = client.get("/v1/recall/log").json()["entries"]
    assert len(entries) == logged + 1 and entries[0]["context"] == ask["context"]
    assert dropped() == {"recall_log": 4}
    assert len(_drop_warnings(caplog, "recall_log")) == 1


def test_a_search_on_a_full_disk_answers_without_the_file_it_cannot_reindex(server, make_client):
    """A search checks each excerpt against its file and re-indexes a file changed behind
    the index: on a full disk that write is dropped and counted, and the search answers
    without the stale excerpt; once there is room, the same search finds the new text."""
    client = make_client()
    photo = {"title": "The attic", "content": "The old trunk in the attic holds the letters."}
    created = client.post("/v1/anchors", json=photo)
    assert created.status_code == 201, created.text
    home = server.settings.data_dir / "entities" / client.entity
    [path] = (home / "word_photos").glob("*.md")
    query = {"query": "the trunk in the attic"}
    longer = "The old trunk in the attic holds winter coats.\n\n" + BIG[:40_000]
    with Full(server.db):  # edited behind the index, longer: its chunks need new pages
        path.write_text(path.read_text().replace(photo["content"], longer))
        response = client.post("/v1/search", json=query)
        assert response.status_code == 200, response.text
        texts = [r["text"] for r in response.json()["results"]]
        assert not any("letters" in text for text in texts), texts  # never the stale text
        dropped = client.get("/health").json()["components"]["database"]["dropped_writes"]
        assert dropped.get("search_reindex", 0) >= 1, dropped

    def found():
        results = client.post("/v1/search", json=query).json()["results"]
        return any("winter coats" in r["text"] for r in results)

    wait_for(found, what="the changed file to be indexed once there is room")


def test_the_web_pages_on_a_full_disk_answer(server):
    """Signing in and every page of /ui are reads (sessions live in memory); a recall from
    the recall page answers too, its log row dropped and counted."""
    ui = UI(server, token := entities.create(server.db, "webby"))
    said = [{"channel": "discord", "content": f"the comfy robe {i} {BIG[:3000]}"} for i in range(5)]
    with connect(server, token) as api:
        assert api.post("/v1/events", json=said).status_code == 200
    try:
        with Full(server.db):
            assert ui.sign_in().status_code == 303
            pages = (
                "/ui/timeline",
                "/ui/memory",
                "/ui/recall",
                "/ui/queue",
                "/ui/audit",
                "/ui/graph",
            )
            for page in pages:
                response = ui.get(page, follow_redirects=True)  # the audit adds its seed
                assert response.status_code == 200, (page, response.text[:500])
            for _ in range(10):  # until the pages left free in the database are used up
                answer = ui.post("/ui/recall", {"context": "the comfy robe", "channel": ""})
                assert answer.status_code == 200, answer.text[:500]
                assert "comfy robe" in answer.text
                if server.db.dropped_writes():
                    break
            assert server.db.dropped_writes() == {"recall_log": 1}
    finally:
        ui.http.close()


def test_a_ticker_on_a_full_disk_logs_once_and_backs_off(server, make_client, caplog):
    """Issue 24, item 3: a background loop whose write the full disk refuses (the episode
    sweeper's, say) logs one line when it starts failing, waits twice as long after each
    failure up to a cap, and logs one line when it recovers, not a traceback a tick."""
    caplog.set_level(logging.INFO, logger="pps.ticker")
    entity = make_client().entity
    big = events.EventIn(channel="terminal", content=BIG)
    now = [1000.0]
    ticker = Ticker(
        "episode-sweeper",
        1.0,
        lambda: events.Capture(server.db, ()).record(entity, [big]),
        clock=lambda: now[0],
    )
    assert ticker.step() == 1.0  # room: every second
    with Full(server.db):
        waits = [ticker.step() for _ in range(8)]
        now[0] += 42
    assert waits == [2.0, 4.0, 8.0, 16.0, 32.0, BACKOFF_CAP_S, BACKOFF_CAP_S, BACKOFF_CAP_S]
    assert ticker.step() == 1.0  # room again: every second again
    lines = [
        r
        for r in caplog.records
        if r.name == "pps.ticker" and r.getMessage().startswith("episode-sweeper")
    ]
    assert [r.getMessage().split(":")[0] for r in lines] == [
        "episode-sweeper failing",
        "episode-sweeper recovered after 42 s",
    ]
    failing = lines[0]
    assert "disk is full" in failing.getMessage() and "\n" not in failing.getMessage()
    assert failing.exc_info is None  # one line, not a chained traceback

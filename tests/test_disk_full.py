"""A full disk (issue 15, items 3 and 4): writes answer 503 with Retry-After in the one
error shape and change nothing, /health says the database cannot write and which worker
cannot record its outcomes, and everything recovers without a restart once there is
space again.

SQLite's `max_page_count` makes the database full exactly as a full disk does
(SQLITE_FULL, "database or disk is full"), without root or a small file system. The
pragma is per connection: `Full` sets it on every connection the app has open and on
each one it opens while the disk is "full".
"""

from __future__ import annotations

import os
import sqlite3
import subprocess

import pytest
from typer.testing import CliRunner

from engine.capture import entities
from engine.search import turns
from engine.store import queue, timestamps
from engine.store.db import Database
from tests.conftest import AppServer, connect, settings_env, wait_for
from tests.mcp_client import ToolFailed, call, session

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
    with AppServer(tmp_path / "data", queue_backoff_max_s=0.5, **fast) as app:
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

    wait_for(recovered, timeout=30, what="the job to finish and /health to recover")


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


def test_home_files_on_a_full_disk_answer_503_and_leave_nothing(tmp_path, small_disk):
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

"""`pps import discord-db`: a daemon's SQLite database with the seed's events table and a
messages table; bad rows skipped with counts; messages with a Discord id get the live
adapter's uid (stored once across both tables and live capture); a re-run is duplicates."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime
from types import SimpleNamespace as Obj

from ingest.client import Client
from ingest.discord import DiscordCapture
from ingest.spool import Spool
from tests.fixtures_ingest import all_events, client_env, pps, summary_counts, token_of


def daemon_database(path) -> None:
    """A Discord daemon's database: the seed's events table, and its messages table."""
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            channel TEXT NOT NULL,
            event_type TEXT NOT NULL,
            content TEXT NOT NULL,
            metadata JSON,
            created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
        );
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            discord_message_id TEXT,
            channel TEXT,
            author TEXT,
            content TEXT,
            is_lyra INTEGER,
            timestamp TEXT
        );
        """
    )
    events = [
        (
            "discord",
            "message",
            "morning, Lyra",
            {"message_id": "7001", "author": "jeff", "channel_id": "222"},
            "2026-01-04 09:00:00",
        ),
        (
            "discord",
            "message",
            "Morning! Coffee?",
            {"message_id": "7002", "author": "lyra"},
            "2026-01-04 09:00:05",
        ),
        ("reflection", "insight", "Jeff likes mornings slow.", None, "2026-01-04 10:00:00"),
        ("Discord General", "session_start", "daemon started", "{not json", "2026-01-04 08:59:00"),
        ("discord", "message", "   ", {"message_id": "7003"}, "2026-01-04 09:01:00"),
        ("discord", "message", "when?", {"message_id": "7004"}, "yesterday-ish"),
    ]
    for channel, kind, content, metadata, moment in events:
        raw = metadata if isinstance(metadata, str) or metadata is None else json.dumps(metadata)
        db.execute(
            "INSERT INTO events (channel, event_type, content, metadata, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (channel, kind, content, raw, moment),
        )
    messages = [
        ("7001", "general", "jeff", "morning, Lyra", 0, "2026-01-04T09:00:00+00:00"),
        ("7005", "general", "lyra", "I saved you a seat.", 1, "2026-01-04T09:02:00+00:00"),
        (None, "general", "jeff", "a message from before ids were kept", 0, "2025-12-01 20:00"),
        ("7006", "general", "jeff", None, 0, "2026-01-04T09:03:00+00:00"),
    ]
    db.executemany(
        "INSERT INTO messages (discord_message_id, channel, author, content, is_lyra, timestamp)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        messages,
    )
    db.commit()
    db.close()


def test_import_a_daemon_database_then_again(make_client, server, tmp_path, processes):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path)
    path = tmp_path / "lyra_memory.db"
    daemon_database(path)

    done = pps("import", "discord-db", str(path), env=env)
    assert done.returncode == 0, done.stderr
    counts = summary_counts(done.stdout)
    # events: 4 good rows, 2 bad; messages: 3 good rows (one is 7001 again), 1 bad.
    assert (counts["imported"], counts["duplicates"], counts["skipped"]) == (6, 1, 3)
    errors = done.stdout.split("first errors:")[1]
    assert "events row 5: missing field content" in errors
    assert "events row 6: created_at" in errors
    assert "messages row 4: missing field content" in errors

    stored = {e["event_uid"]: e for e in all_events(api)}
    assert stored["discord:7001"]["content"] == "morning, Lyra"
    assert stored["discord:7001"]["session_id"] == "discord:222"
    assert stored["discord:7001"]["created_at"] == "2026-01-04T09:00:00.000000Z"
    assert stored["discord:7005"]["role"] == "assistant"
    assert stored["discord:7005"]["session_id"] == "discord:general"
    insight = stored["discord-db:events:3"]
    assert (insight["channel"], insight["event_type"]) == ("reflection", "insight")
    started = stored["discord-db:events:4"]
    assert started["channel"] == "discord-general"
    assert started["metadata"]["daemon_metadata"] == "{not json"
    assert stored["discord-db:messages:3"]["created_at"] == "2025-12-01T20:00:00.000000Z"

    again = summary_counts(pps("import", "discord-db", str(path), env=env).stdout)
    assert (again["imported"], again["duplicates"]) == (0, 7)


def test_live_capture_and_import_store_a_message_once(make_client, server, tmp_path, processes):
    api = make_client()
    path = tmp_path / "lyra_memory.db"
    daemon_database(path)
    live = Obj(
        id=7005,
        content="I saved you a seat.",
        author=Obj(id=1, name="lyra", display_name="Lyra", bot=True),
        channel=Obj(id=222, name="general"),
        guild=Obj(id=111, name="Hearth"),
        created_at=datetime(2026, 1, 4, 9, 2, tzinfo=UTC),
        attachments=[],
        reference=None,
    )

    async def daemon(bot: DiscordCapture) -> None:
        await bot.on_message(live)
        assert (await bot.drain()).stored == 1
        await bot.aclose()

    with Client(server.url, token_of(api), Spool(tmp_path / "spool.jsonl")) as client:
        asyncio.run(daemon(DiscordCapture(client, self_id=1)))
    env = client_env(server.url, token_of(api), tmp_path)
    counts = summary_counts(pps("import", "discord-db", str(path), env=env).stdout)
    assert counts["duplicates"] == 2  # 7005 captured live; 7001 in both tables
    assert len([e for e in all_events(api) if e["event_uid"] == "discord:7005"]) == 1


def test_a_file_that_is_not_a_daemon_database_is_refused(make_client, server, tmp_path, processes):
    api = make_client()
    env = client_env(server.url, token_of(api), tmp_path)
    text = tmp_path / "notes.db"
    text.write_text("these are not the tables you are looking for")
    done = pps("import", "discord-db", str(text), env=env)
    assert done.returncode == 1 and "not a readable SQLite database" in done.stderr
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE things (x)").connection.close()
    done = pps("import", "discord-db", str(other), env=env)
    assert done.returncode == 1 and "neither an events nor a messages table" in done.stderr
    assert all_events(api) == []

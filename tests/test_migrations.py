"""The schema comes only from migrations/, applied in order; a database made at any
earlier version migrates forward to the same schema, keeping its data."""

from __future__ import annotations

import pytest

from engine.capture import entities
from engine.store.db import Database, migrations

VERSIONS = [m.version for m in migrations()]
LATEST = VERSIONS[-1]
EVENTS_TABLE = 2  # the version that created `events`
SEARCH_INDEX = 5  # the version that created `search_chunks` and its FTS5 index


def _schema(db: Database) -> set[tuple[str, str]]:
    rows = db.conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
    )
    return {(row["name"], row["sql"]) for row in rows}


def test_fresh_database_is_at_latest_version(tmp_path):
    db = Database(tmp_path / "pps.sqlite3")
    assert db.migrate() == LATEST
    applied = db.conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")
    assert [tuple(r) for r in applied] == [(m.version, m.name) for m in migrations()]
    assert db.migrate() == LATEST  # applying again changes nothing


@pytest.mark.parametrize("start", [0, *VERSIONS[:-1]])
def test_every_earlier_version_migrates_forward(tmp_path, start):
    fresh = Database(tmp_path / "fresh.sqlite3")
    fresh.migrate()

    old = Database(tmp_path / "old.sqlite3")
    assert old.migrate(upto=start) == start
    if start >= EVENTS_TABLE:  # events exist from version 2 on: data written then must survive
        token = entities.create(old, "lyra")
        with old.write() as conn:
            conn.execute(
                "INSERT INTO events (entity, event_uid, channel, event_type, content,"
                " created_at, received_at) VALUES ('lyra', 'u1', 'terminal', 'message',"
                " 'the comfy robe', '2026-01-04T12:00:00.000000Z', '2026-01-04T12:00:00.000000Z')"
            )
    if start >= SEARCH_INDEX:
        with old.write() as conn:
            conn.execute(
                "INSERT INTO search_chunks (entity, tier, kind, event_id, content_hash,"
                " embed_hash, body) SELECT 'lyra', 'longform', 'turn', id, 'h', 'h',"
                " 'the velvet robe' FROM events WHERE event_uid = 'u1'"
            )
    assert old.migrate() == LATEST
    assert _schema(old) == _schema(fresh)
    if start >= EVENTS_TABLE:
        assert entities.authenticate(old, token) == "lyra"
        hit = old.conn.execute("SELECT rowid FROM events_fts WHERE events_fts MATCH 'robe'")
        assert hit.fetchone() is not None, "events written before the FTS index are searchable"
    if start >= SEARCH_INDEX:  # chunks indexed before their scope was (0006) are still found
        scoped = f'"velvet" AND scope:{b"lyra".hex()}xlongform'
        hit = old.conn.execute("SELECT rowid FROM search_fts WHERE search_fts MATCH ?", (scoped,))
        assert hit.fetchone() is not None


def test_database_and_data_dir_are_private(tmp_path):
    from engine.kernel.config import Settings

    settings = Settings(data_dir=tmp_path / "data")
    Database.open(settings)
    assert (settings.data_dir.stat().st_mode & 0o777) == 0o700
    assert (settings.database_path.stat().st_mode & 0o777) == 0o600


def test_database_is_in_wal_mode_with_a_busy_timeout(tmp_path):
    db = Database(tmp_path / "pps.sqlite3", busy_timeout_ms=1234)
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 1234

"""The record of each backup taken (`backups`, migrations/0050_backups.sql): what the
operator's `GET /v1/operator/backups`, /health's `backup` component and `pps doctor`
show. The archive's file name only, never its folder, a passphrase or a key."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from engine.kernel import timestamps
from engine.store.db import Database


class BackupRecord(BaseModel):
    id: int
    created_at: str
    entity: str | None = Field(description="The one entity backed up; null: the whole data dir.")
    archive: str = Field(description="The archive's file name (never its folder).")
    size: int = Field(description="Bytes of the archive as written (encrypted, if it is).")
    sha256: str = Field(description="Of the archive as written.")
    encrypted: str | None = Field(description="null, `passphrase` or `recipient`.")
    events: int
    files: int
    entities: int


def add(
    db: Database,
    *,
    entity: str | None,
    archive: str,
    size: int,
    sha256: str,
    encrypted: str | None,
    events: int,
    files: int,
    entities: int,
    created_at: str | None = None,
) -> BackupRecord:
    with db.write() as conn:
        cursor = conn.execute(
            "INSERT INTO backups (created_at, entity, archive, size, sha256, encrypted, events,"
            " files, entities) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                created_at or timestamps.now(),
                entity,
                archive,
                size,
                sha256,
                encrypted,
                events,
                files,
                entities,
            ),
        )
        row = conn.execute("SELECT * FROM backups WHERE id = ?", (cursor.lastrowid,)).fetchone()
    return BackupRecord(**dict(row))


def recent(db: Database, limit: int = 50) -> list[BackupRecord]:
    """The newest backups first."""
    rows = db.conn.execute(
        "SELECT * FROM backups ORDER BY created_at DESC, id DESC LIMIT ?", (limit,)
    ).fetchall()
    return [BackupRecord(**dict(row)) for row in rows]


def last(db: Database) -> BackupRecord | None:
    found = recent(db, 1)
    return found[0] if found else None


def status(db: Database, now: datetime | None = None) -> dict:
    """The `backup` component of /health: the last backup's time and age, without entity
    names; `none` when there never was one (which degrades nothing)."""
    latest = last(db)
    if latest is None:
        return {"status": "none", "why": "no backup yet: `pps backup OUT` takes one"}
    taken = timestamps.parse(latest.created_at)
    age = ((now or datetime.now(UTC)) - taken).total_seconds()
    return {
        "status": "ok",
        "last_at": latest.created_at,
        "age_s": round(max(age, 0.0)),
        "scope": "entity" if latest.entity else "all",
        "encrypted": latest.encrypted is not None,
    }

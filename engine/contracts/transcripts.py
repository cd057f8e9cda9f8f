"""Session transcripts: the raw turns of one channel on one UTC day, read as a file.

OpenClaw's memory_search returns every hit as a path and a line range that memory_get
can read around, and its transcripts are among the hits. Raw turns live in layer 1, not
in files, so each channel's day is given a path, `sessions/<channel>/<YYYY-MM-DD>.md`,
whose lines are rendered from the events when asked: one turn is
`[HH:MM:SS] author: first line`, its further lines below it as they are. Nothing is
written to disk; the events stay the only record, and the lines are the same every time
they are rendered (turns in time order, then id order).
"""

from __future__ import annotations

import re
from datetime import date as Date
from pathlib import PurePosixPath

from pydantic import BaseModel

from engine.kernel.errors import InputError, NotFound
from engine.kernel.patterns import CHANNEL_PATTERN
from engine.search.homes import MAX_READ_LINES, FileLines
from engine.store.db import Database

FOLDER = "sessions"
_SHAPE = "sessions/<channel>/<YYYY-MM-DD>.md, as memory_search gives it"
# Lines a turn takes in its transcript, counted the way `_render` splits them.
_LINES = "(length(content) - length(replace(content, char(10), '')) + 1)"


class Location(BaseModel):
    path: str
    start_line: int
    end_line: int


def is_transcript(relative: str) -> bool:
    """Whether a caller's path names a transcript (the `sessions/` folder is theirs)."""
    return PurePosixPath(relative.replace("\\", "/")).parts[:1] == (FOLDER,)


def path_of(channel: str, created_at: str) -> str:
    return f"{FOLDER}/{channel}/{created_at[:10]}.md"


def locate(db: Database, entity: str, event_uids: list[str]) -> dict[str, Location]:
    """Where each of the entity's turns stands in its transcript (unknown uids are left
    out). Only the line counts of the day's earlier turns are read, not their text."""
    found = {}
    for uid in dict.fromkeys(event_uids):
        event = db.conn.execute(
            "SELECT id, channel, content, created_at FROM events"
            " WHERE entity = ? AND event_uid = ?",
            (entity, uid),
        ).fetchone()
        if event is None:
            continue
        day = event["created_at"][:10]
        before = db.conn.execute(
            f"SELECT COALESCE(SUM({_LINES}), 0) FROM events"
            " WHERE entity = ? AND channel = ? AND created_at >= ? AND (created_at, id) < (?, ?)",
            (entity, event["channel"], f"{day}T", event["created_at"], event["id"]),
        ).fetchone()[0]
        start = before + 1
        found[uid] = Location(
            path=path_of(event["channel"], event["created_at"]),
            start_line=start,
            end_line=start + event["content"].count("\n"),
        )
    return found


def read(
    db: Database, entity: str, relative: str, start: int = 1, count: int | None = None
) -> FileLines:
    """memory_get on a transcript: `count` lines (default: up to MAX_READ_LINES) from
    line `start`, as homes.read_lines answers for a file."""
    channel, day = _parse(relative)
    rows = db.conn.execute(
        "SELECT author, content, created_at FROM events"
        " WHERE entity = ? AND channel = ? AND created_at >= ? AND created_at < ?"
        " ORDER BY created_at, id",
        (entity, channel, f"{day}T", f"{day}U"),
    ).fetchall()
    if not rows:
        raise NotFound(f"no turns on channel {channel!r} on {day}")
    lines = [line for row in rows for line in _render(row)]
    chosen = lines[start - 1 : start - 1 + (MAX_READ_LINES if count is None else count)]
    return FileLines(
        path=path_of(channel, day),
        start=start,
        to=start + len(chosen) - 1,
        total_lines=len(lines),
        text="\n".join(chosen),
    )


def _parse(relative: str) -> tuple[str, str]:
    parts = PurePosixPath(relative.replace("\\", "/")).parts
    if len(parts) != 3 or not parts[2].endswith(".md"):
        raise InputError.of("path", f"a transcript path is {_SHAPE}")
    channel, day = parts[1], parts[2].removesuffix(".md")
    if not re.fullmatch(CHANNEL_PATTERN, channel):
        raise InputError.of("path", f"{channel!r} is not a channel; a transcript path is {_SHAPE}")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) or not _is_date(day):
        raise InputError.of("path", f"{day!r} is not a day; a transcript path is {_SHAPE}")
    return channel, day


def _is_date(day: str) -> bool:
    try:
        Date.fromisoformat(day)
    except ValueError:
        return False
    return True


def _render(row) -> list[str]:
    first, *rest = row["content"].split("\n")
    time = row["created_at"][11:19]
    speaker = f"{row['author']}: " if row["author"] else ""
    return [f"[{time}] {speaker}{first}", *rest]

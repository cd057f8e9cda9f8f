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

from engine.capture import events
from engine.capture.events import Event, Span
from engine.kernel.errors import InputError, NotFound
from engine.kernel.limits import MAX_READ_LINES
from engine.kernel.patterns import CHANNEL_PATTERN
from engine.search.homes import FileLines
from engine.store.db import Database

FOLDER = "sessions"
_SHAPE = "sessions/<channel>/<YYYY-MM-DD>.md, as memory_search gives it"


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
        try:
            event = events.get_event(db, entity, event_uid=uid)
        except NotFound:
            continue
        day = Span(entity, channel=event.channel, since=f"{event.created_at[:10]}T")
        start = events.lines_before(db, day, event) + 1
        found[uid] = Location(
            path=path_of(event.channel, event.created_at),
            start_line=start,
            end_line=start + event.content.count("\n"),
        )
    return found


def read(
    db: Database, entity: str, relative: str, start: int = 1, count: int | None = None
) -> FileLines:
    """memory_get on a transcript: `count` lines (default: up to MAX_READ_LINES) from
    line `start`, as homes.read_lines answers for a file."""
    channel, day = _parse(relative)
    turns = events.in_span(db, Span(entity, channel=channel, since=f"{day}T", before=f"{day}U"))
    if not turns:
        raise NotFound(f"no turns on channel {channel!r} on {day}")
    lines = [line for turn in turns for line in _render(turn)]
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


def _render(event: Event) -> list[str]:
    first, *rest = event.content.split("\n")
    time = event.created_at[11:19]
    speaker = f"{event.author}: " if event.author else ""
    return [f"[{time}] {speaker}{first}", *rest]

"""`pps import discord-db FILE`: the SQLite database of an existing Discord daemon.

Two tables are read, whichever exist (opened read-only; the daemon may keep running):
- `events(id, channel, event_type, content, metadata, created_at)`, the seed's schema;
  `metadata` is JSON (kept as text when it is not).
- `messages`, with content, author, channel and timestamp columns under the names daemons
  use (author or author_name or username; channel, channel_name or channel_id; timestamp
  or created_at), and optionally the Discord message id (discord_message_id or
  message_id) and whether the bot wrote it (is_bot, is_lyra, is_self, from_bot).

A row with a Discord message id gets the live adapter's uid (`discord:<id>`), so a
message captured live, or present in both tables, is stored once; any other row is
`discord-db:<table>:<id>`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from rich.progress import Progress

from engine.kernel import timestamps
from engine.kernel.patterns import CHANNEL_PATTERN
from ingest import events as ev
from ingest.discord import message_uid
from ingest.importers import Import, Summary, progress_task


class DatabaseError(Exception):
    """The file is not a database this importer can read; nothing was imported."""


_AUTHOR = ("author", "author_name", "username", "user_name")
_CHANNEL = ("channel", "channel_name", "channel_id")
_MOMENT = ("timestamp", "created_at", "sent_at")
_MESSAGE_ID = ("discord_message_id", "message_id", "discord_id")
_FROM_BOT = ("is_bot", "is_lyra", "is_self", "from_bot", "is_assistant")


def run(importer: Import, path: Path, *, progress: Progress | None = None) -> Summary:
    summary = importer.summary
    summary.files = 1
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error as exc:
        raise DatabaseError(f"{path}: not a readable SQLite database ({exc})") from None
    wanted = [name for name in ("events", "messages") if name in tables]
    if not wanted:
        raise DatabaseError(f"{path}: has neither an events nor a messages table")
    try:
        for table in wanted:
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            total = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            advance = progress_task(progress, f"discord-db {table}", total)
            convert = _from_events_row if table == "events" else _from_messages_row
            key = "id" if "id" in columns else "rowid"
            for row in db.execute(f"SELECT {key} AS _key, * FROM {table} ORDER BY {key}"):
                advance(1)
                summary.read += 1
                where = f"{table} row {row['_key']}"
                try:
                    event = convert(dict(row), columns)
                except ValueError as exc:
                    summary.skip(where, str(exc))
                    continue
                importer.add(event, where)
    except sqlite3.Error as exc:
        summary.skip(str(path), f"reading stopped: {exc}")
    finally:
        db.close()
    return importer.finish()


def _from_events_row(row: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    content = _text(row, "content")
    raw = row.get("metadata")
    if isinstance(raw, bytes):
        raw = raw.decode(errors="replace")
    try:
        metadata = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
        if not isinstance(metadata, dict):
            metadata = {"daemon_metadata": metadata}
    except ValueError:
        metadata = {"daemon_metadata": raw}
    event_type = _name(row.get("event_type"), "message")
    message_id = _first(metadata, _MESSAGE_ID)
    if message_id is not None and event_type == "message":
        uid = message_uid(message_id)
    else:
        uid = ev.uid("discord-db", "events", row["_key"])
    where = metadata.get("thread_id") or metadata.get("channel_id")
    author = _first(metadata, _AUTHOR)
    return {
        "event_uid": uid,
        "channel": _name(row.get("channel"), "discord"),
        "event_type": event_type,
        "author": str(author)[:256] if author is not None else None,
        "content": content,
        "session_id": f"discord:{where}" if where else None,
        "created_at": _moment(row, ("created_at",)),
        "metadata": {"source": "discord-db", "daemon_table": "events", **metadata},
    }


def _from_messages_row(row: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    content = _text(row, "content")
    message_id = _first(row, _MESSAGE_ID)
    uid = (
        message_uid(message_id)
        if message_id is not None
        else ev.uid("discord-db", "messages", row["_key"])
    )
    channel = _first(row, _CHANNEL)
    author = _first(row, _AUTHOR)
    from_bot = _first(row, _FROM_BOT)
    metadata: dict[str, Any] = {"source": "discord-db", "daemon_table": "messages"}
    extra = set(columns) - {"content", "_key", *_AUTHOR, *_MOMENT, *_MESSAGE_ID}
    metadata.update(
        {name: row[name] for name in sorted(extra) if isinstance(row.get(name), str | int | float)}
    )
    if message_id is not None:
        metadata["message_id"] = str(message_id)
    return {
        "event_uid": uid,
        "channel": "discord",
        "event_type": "message",
        "author": str(author)[:256] if author is not None else None,
        "role": None if from_bot is None else ("assistant" if from_bot else "user"),
        "content": content,
        "session_id": f"discord:{channel}" if channel is not None else None,
        "created_at": _moment(row, _MOMENT),
        "metadata": metadata,
    }


def _text(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    if isinstance(value, bytes):
        try:
            value = value.decode()
        except UnicodeDecodeError:
            raise ValueError(f"{column} is not UTF-8 text") from None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"missing field {column}")
    return value


def _moment(row: dict[str, Any], names: tuple[str, ...]) -> str:
    value = _first(row, names)
    if value is None:
        raise ValueError(f"missing field {names[0]}")
    try:
        return timestamps.normalise(value)
    except ValueError as exc:
        raise ValueError(f"{names[0]}: {exc}") from None


def _first(source: dict[str, Any], names: tuple[str, ...]) -> Any:
    return next((source[n] for n in names if source.get(n) not in (None, "")), None)


def _name(value: Any, default: str) -> str:
    """A daemon's channel or event type as a pps name ('Discord General' -> 'discord-general')."""
    if not isinstance(value, str) or not value.strip():
        return default
    name = re.sub(r"[^a-z0-9_.:-]+", "-", value.strip().lower()).strip("-_.:")[:64]
    return name if re.fullmatch(CHANNEL_PATTERN, name) else default

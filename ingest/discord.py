"""A Discord daemon's messages, edits and deletions as events.

For a daemon built on discord.py, without importing it: the functions read the
attributes discord.py's objects carry (`Message`, `RawMessageDeleteEvent`, threads,
attachments), so any object with those attributes works, and the tests build plain
ones. `DiscordCapture` is what a daemon wires into its event handlers; sending happens in
a worker thread (the client is synchronous) and spools when the service is down, so the
bot's event loop never waits on pps. docs/capture.md has a complete example daemon.

A message is `discord:<message id>` (channel `discord`, its author, guild, channel, thread
and attachments in the metadata, the channel or thread as the session); an edit is
`discord:<id>:edit:<edited_at>` with the new text; a deletion is `discord:<id>:delete`.
The importer of a daemon's SQLite database names a message the same way when it knows
its Discord id, so live capture and import never store one message twice.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from ingest import events as ev
from ingest.client import Client, Flushed

CHANNEL = "discord"


def message_uid(message_id: Any) -> str:
    return ev.uid("discord", message_id)


def message_event(message: Any, *, self_id: Any = None) -> dict[str, Any]:
    """A message as an event. `self_id`: the bot's own user id; its messages get the role
    `assistant`, everyone else's `user`."""
    author = message.author
    metadata = {
        "source": "discord",
        "message_id": str(message.id),
        "author_id": str(author.id),
        "author_name": getattr(author, "name", None),
        **_place(message),
    }
    if getattr(author, "bot", False):
        metadata["author_is_bot"] = True
    attachments = [_attachment(a) for a in getattr(message, "attachments", None) or []]
    if attachments:
        metadata["attachments"] = attachments
    reference = getattr(message, "reference", None)
    if reference is not None and getattr(reference, "message_id", None) is not None:
        metadata["reply_to"] = str(reference.message_id)
    is_self = self_id is not None and str(author.id) == str(self_id)
    return {
        "event_uid": message_uid(message.id),
        "channel": CHANNEL,
        "event_type": "message",
        "author": _display_name(author),
        "role": "assistant" if is_self else "user",
        "content": _content(message, attachments),
        "session_id": _session(metadata),
        "created_at": _moment(getattr(message, "created_at", None)),
        "metadata": metadata,
    }


def edit_event(before: Any, after: Any, *, self_id: Any = None) -> dict[str, Any] | None:
    """An edit as an event with the new text, or None when the text did not change
    (Discord also reports embeds being resolved as edits)."""
    if getattr(before, "content", None) == after.content:
        return None
    event = message_event(after, self_id=self_id)
    edited = getattr(after, "edited_at", None)
    stamp = edited.isoformat() if isinstance(edited, datetime) else "unknown"
    event["event_uid"] = ev.uid("discord", after.id, "edit", stamp)
    event["event_type"] = "edit"
    event["created_at"] = _moment(edited) or event["created_at"]
    event["metadata"]["previous_content"] = getattr(before, "content", None)
    return event


def delete_event(message_or_payload: Any) -> dict[str, Any]:
    """A deletion as an event, from a cached message (`on_message_delete`) or a raw
    payload (`on_raw_message_delete`, which also covers messages not in the cache)."""
    message_id = getattr(message_or_payload, "message_id", None)
    if message_id is None:
        message_id = message_or_payload.id
    metadata = {"source": "discord", "message_id": str(message_id)}
    cached = getattr(message_or_payload, "cached_message", message_or_payload)
    if cached is not None and hasattr(cached, "channel"):
        metadata.update(_place(cached))
    else:
        for key in ("channel_id", "guild_id"):
            value = getattr(message_or_payload, key, None)
            if value is not None:
                metadata[key] = str(value)
    return {
        "event_uid": ev.uid("discord", message_id, "delete"),
        "channel": CHANNEL,
        "event_type": "delete",
        "content": f"message {message_id} was deleted",
        "session_id": _session(metadata),
        "metadata": metadata,
    }


class DiscordCapture:
    """Handlers for a discord.py client; each returns what the send did (or None)."""

    def __init__(self, client: Client, *, self_id: Any = None, skip_bots: bool = False):
        self.client = client
        self.self_id = self_id
        self.skip_bots = skip_bots

    async def on_message(self, message: Any) -> Flushed | None:
        author = message.author
        if self.skip_bots and getattr(author, "bot", False) and str(author.id) != str(self.self_id):
            return None
        return await self._send(message_event(message, self_id=self.self_id))

    async def on_message_edit(self, before: Any, after: Any) -> Flushed | None:
        return await self._send(edit_event(before, after, self_id=self.self_id))

    async def on_raw_message_delete(self, payload: Any) -> Flushed | None:
        return await self._send(delete_event(payload))

    async def _send(self, event: dict[str, Any] | None) -> Flushed | None:
        if event is None:
            return None
        return await asyncio.to_thread(self.client.send, [event])


def _place(message: Any) -> dict[str, str]:
    """Guild, channel and thread ids and names (a thread's channel is its parent)."""
    place: dict[str, str] = {}
    guild = getattr(message, "guild", None)
    if guild is not None:
        place["guild_id"] = str(guild.id)
        if getattr(guild, "name", None):
            place["guild_name"] = guild.name
    channel = message.channel
    parent = getattr(channel, "parent", None)
    parent_id = getattr(channel, "parent_id", None)
    if parent is not None or parent_id is not None:
        place["thread_id"] = str(channel.id)
        if getattr(channel, "name", None):
            place["thread_name"] = channel.name
        channel = parent
        if channel is None:
            place["channel_id"] = str(parent_id)
            return place
    place["channel_id"] = str(channel.id)
    if getattr(channel, "name", None):
        place["channel_name"] = channel.name
    return place


def _session(metadata: dict[str, Any]) -> str | None:
    where = metadata.get("thread_id") or metadata.get("channel_id")
    return f"discord:{where}" if where else None


def _attachment(attachment: Any) -> dict[str, Any]:
    found = {"id": str(getattr(attachment, "id", "")), "filename": attachment.filename}
    for key in ("url", "content_type", "size"):
        value = getattr(attachment, key, None)
        if value is not None:
            found[key] = value
    return found


def _content(message: Any, attachments: list[dict[str, Any]]) -> str:
    """The text, or what the message carried instead (the service stores no empty content)."""
    if (message.content or "").strip():
        return str(message.content)
    if attachments:
        return "[attachments: " + ", ".join(a["filename"] for a in attachments) + "]"
    if getattr(message, "stickers", None):
        return "[sticker]"
    if getattr(message, "embeds", None):
        return "[embed]"
    return "[empty message]"


def _display_name(author: Any) -> str | None:
    name = getattr(author, "display_name", None) or getattr(author, "name", None)
    return str(name)[:256] if name else None


def _moment(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None

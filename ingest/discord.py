"""A Discord daemon's messages, edits and deletions as events.

For a daemon built on discord.py, without importing it: the functions read the
attributes discord.py's objects carry (`Message`, `Member`/`User`, `RawMessageUpdateEvent`,
`RawMessageDeleteEvent`, threads, attachments), so the adapter loads without discord.py.
`DiscordCapture` is what a daemon wires into its event handlers: a handler spools its
event (durably, on disk) and returns; one background task sends the spool, one flush at a
time, and retries while the service is down, so the bot's event loop never waits on pps
and nothing Discord delivered is lost. docs/capture.md has a complete example daemon.

A message is `discord:<message id>` (channel `discord`, the author's username as its
`author`, the same in every guild; display names, guild, channel, thread and attachments
in the metadata, the channel or thread as the session); an edit is
`discord:<id>:edit:<edited_at>` with the new text, naming the message it replaces
(`replaces` in its metadata); a deletion is `discord:<id>:delete` (`deletes`: the same).
The importer of a daemon's SQLite database names a message the same way when it knows
its Discord id, so live capture and import never store one message twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import Any

from ingest import events as ev
from ingest.client import DEFAULT_LABEL, DISCORD_LABEL, Client, Flushed

CHANNEL = "discord"
RETRY_S = 5.0
"""How long the sender waits before trying a failed flush again (sooner on a new event)."""

log = logging.getLogger(__name__)


def message_uid(message_id: Any) -> str:
    return ev.uid("discord", message_id)


def message_event(message: Any, *, self_id: Any = None) -> dict[str, Any]:
    """A message as an event. `self_id`: the bot's own user id; its messages get the role
    `assistant`, everyone else's `user`."""
    author = message.author
    metadata: dict[str, Any] = {
        "source": "discord",
        "message_id": str(message.id),
        "author_id": str(author.id),
        **_names(author),
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
        "author": _username(author),
        "role": "assistant" if is_self else "user",
        "content": _content(message, attachments),
        "session_id": _session(metadata),
        "created_at": _moment(getattr(message, "created_at", None)),
        "metadata": metadata,
    }


def edit_event(before: Any, after: Any, *, self_id: Any = None) -> dict[str, Any] | None:
    """An edit as an event with the new text, or None when the text did not change
    (Discord also reports embeds being resolved as updates). `before` is None for a
    message discord.py had not cached (sent before the bot started, or pushed out of its
    cache): then an update is an edit when Discord stamped it edited."""
    edited = getattr(after, "edited_at", None)
    if before is None and edited is None:
        return None
    if before is not None and getattr(before, "content", None) == after.content:
        return None
    event = message_event(after, self_id=self_id)
    stamp = edited.isoformat() if isinstance(edited, datetime) else "unknown"
    event["event_uid"] = ev.uid("discord", after.id, "edit", stamp)
    event["event_type"] = "edit"
    event["created_at"] = _moment(edited) or event["created_at"]
    event["metadata"]["previous_content"] = getattr(before, "content", None)
    event["metadata"]["replaces"] = message_uid(after.id)
    return event


def delete_event(message_or_payload: Any) -> dict[str, Any]:
    """A deletion as an event, from a cached message (`on_message_delete`) or a raw
    payload (`on_raw_message_delete`, which also covers messages not in the cache)."""
    message_id = getattr(message_or_payload, "message_id", None)
    if message_id is None:
        message_id = message_or_payload.id
    metadata: dict[str, Any] = {
        "source": "discord",
        "message_id": str(message_id),
        "deletes": message_uid(message_id),
    }
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
    """Handlers for a discord.py client. Each spools its event and returns it (None when
    there is nothing to store) without waiting on the service; `drain` waits for the
    sending, `aclose` stops it."""

    def __init__(
        self,
        client: Client,
        *,
        self_id: Any = None,
        skip_bots: bool = False,
        retry_s: float = RETRY_S,
    ):
        self.client = client
        if client.label == DEFAULT_LABEL:  # the service shows its calls as the adapter's
            client.label = DISCORD_LABEL
        self.self_id = self_id
        self.skip_bots = skip_bots
        self.retry_s = retry_s
        self.last: Flushed | None = None
        """What the newest flush did (its `error`: why the service has not taken them)."""
        # One thread each: appends keep the handlers' order, and one flush at a time
        # sends (a burst is one flush, not many racing for the spool).
        self._spooler = ThreadPoolExecutor(1, thread_name_prefix="pps-discord-spool")
        self._sender = ThreadPoolExecutor(1, thread_name_prefix="pps-discord-send")
        self._spooled = 0
        self._offered = 0
        self._since_drain = Flushed()
        self._wake: asyncio.Event | None = None
        self._offered_changed: asyncio.Condition | None = None
        self._task: asyncio.Task[None] | None = None

    async def on_message(self, message: Any) -> dict[str, Any] | None:
        author = message.author
        if self.skip_bots and getattr(author, "bot", False) and str(author.id) != str(self.self_id):
            return None
        return await self._spool(message_event(message, self_id=self.self_id))

    async def on_raw_message_edit(self, payload: Any) -> dict[str, Any] | None:
        """Every edit, of a cached message or not (`on_message_edit` gets only the
        cached ones): the message as edited (`payload.message`, discord.py 2.5 and
        later) and, where it was cached, as it was before."""
        edit = edit_event(payload.cached_message, payload.message, self_id=self.self_id)
        return await self._spool(edit)

    async def on_raw_message_delete(self, payload: Any) -> dict[str, Any] | None:
        return await self._spool(delete_event(payload))

    async def drain(self) -> Flushed:
        """Wait until every event spooled so far has been offered to the service (taken,
        or kept in the spool because the service failed); what the flushes since the last
        drain did, with the newest flush's `error` and `pending`."""
        target = self._spooled
        if target > self._offered:
            assert self._offered_changed is not None
            async with self._offered_changed:
                await self._offered_changed.wait_for(lambda: self._offered >= target)
        done, self._since_drain = self._since_drain, Flushed()
        return done

    async def aclose(self) -> None:
        """Stop the sender. What it has not sent stays in the spool, for the next start
        or `pps ingest flush`."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._spooler.shutdown(wait=True)
        self._sender.shutdown(wait=False, cancel_futures=True)

    async def _spool(self, event: dict[str, Any] | None) -> dict[str, Any] | None:
        if event is None:
            return None
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._spooler, self.client.spool.append, [event])
        self._spooled += 1
        self._start().set()
        return event

    def _start(self) -> asyncio.Event:
        """The sender's wake-up, starting the sender on the first event."""
        if self._wake is None:
            self._wake = asyncio.Event()
            self._offered_changed = asyncio.Condition()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._send_forever())
        return self._wake

    async def _send_forever(self) -> None:
        assert self._wake is not None and self._offered_changed is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            upto = self._spooled
            result = await loop.run_in_executor(self._sender, self._flush)
            self.last = result
            self._since_drain = _merged(self._since_drain, result)
            async with self._offered_changed:
                self._offered = max(self._offered, upto)
                self._offered_changed.notify_all()
            if result.error is not None and result.pending:
                try:
                    await asyncio.wait_for(self._wake.wait(), self.retry_s)
                except TimeoutError:
                    self._wake.set()

    def _flush(self) -> Flushed:
        """(In the sender's thread) one flush; a failure of the spool itself (a full
        disk, ...) is logged and reported, and the sender tries again later."""
        try:
            return self.client.flush()
        except Exception as exc:
            log.exception("pps: sending the Discord spool failed")
            try:
                pending = self.client.spool.pending()
            except OSError:
                pending = 1
            return Flushed(error=f"sending the spool failed: {exc!r}", pending=pending)


def _merged(earlier: Flushed, later: Flushed) -> Flushed:
    """Two flushes as one: counts added, the later one's error and pending."""
    return replace(
        later,
        stored=earlier.stored + later.stored,
        duplicates=earlier.duplicates + later.duplicates,
        rejected=earlier.rejected + later.rejected,
        acked={**later.acked, **earlier.acked},
    )


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


def _username(author: Any) -> str | None:
    """The account's username: unique on Discord and the same in every guild, where a
    display name is a per-guild nickname or a global name anyone may share or change.
    An account from before Discord's unique usernames keeps its `#discriminator`."""
    name = getattr(author, "name", None)
    if not name:
        return None
    discriminator = str(getattr(author, "discriminator", None) or "0")
    return (f"{name}#{discriminator}" if discriminator != "0" else str(name))[:256]


def _names(author: Any) -> dict[str, str]:
    """The names the author shows under: the username, the global display name, and the
    guild nickname, each when it has one."""
    names = {}
    for key, attribute in (("author_name", "name"), ("author_global_name", "global_name")):
        value = getattr(author, attribute, None)
        if value:
            names[key] = str(value)
    nick = getattr(author, "nick", None)
    if nick:
        names["author_nick"] = str(nick)
    shown = getattr(author, "display_name", None)
    if shown:
        names["author_display_name"] = str(shown)
    return names


def _moment(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None

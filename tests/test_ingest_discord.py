"""The Discord adapter, driven the way a discord.py daemon drives it: discord.py's own
Message, Member, Thread and raw delete objects, built by its `ConnectionState` from gateway
payloads (MESSAGE_CREATE, MESSAGE_UPDATE, MESSAGE_DELETE), handed to the handlers a daemon
wires, against a real server: messages, edits and deletions become events, once; the
handlers never wait on the service; one person is one author."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import threading
from datetime import UTC, datetime
from typing import Any

import discord
from discord.http import HTTPClient
from discord.state import ConnectionState
from discord.utils import time_snowflake

from engine.capture import entities
from ingest.client import Client
from ingest.discord import DiscordCapture, message_event
from ingest.spool import Spool
from tests.conftest import AppServer, wait_for
from tests.fixtures_ingest import all_events, token_of

BOT_ID = 9001
GUILD, OTHER_GUILD, GENERAL, THREAD, DM = 111, 112, 222, 333, 444
JEFF = {"id": "42", "username": "jeff", "global_name": "Jeff", "discriminator": "0"}
LYRA = {"id": str(BOT_ID), "username": "lyra", "global_name": "Lyra", "bot": True}
MORNING = datetime(2026, 1, 4, 14, 30, tzinfo=UTC)


def snowflake(second: int) -> int:
    """A message id as Discord makes them: its creation time, `second`s after MORNING."""
    return time_snowflake(MORNING.replace(second=second % 60, minute=30 + second // 60))


def _stamp(moment: datetime) -> str:
    return moment.isoformat()


class Gateway:
    """discord.py's connection state fed gateway payloads; each `create`/`update`/`delete`
    returns what discord.py dispatches to a daemon's handler for it."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.dispatched: list[tuple[str, tuple[Any, ...]]] = []
        intents = discord.Intents.default()
        intents.message_content = True
        self.state = ConnectionState(
            dispatch=lambda event, *args: self.dispatched.append((event, args)),
            handlers={},
            hooks={},
            http=HTTPClient(loop),
            intents=intents,
        )
        self.state.loop = loop
        for guild_id, name in ((GUILD, "Hearth"), (OTHER_GUILD, "Workshop")):
            channels = [{"id": str(GENERAL + guild_id - GUILD), "type": 0, "name": "general"}]
            threads = []
            if guild_id == GUILD:
                threads.append(
                    {
                        "id": str(THREAD),
                        "type": 11,
                        "name": "robe-talk",
                        "parent_id": str(GENERAL),
                        "guild_id": str(GUILD),
                        "owner_id": JEFF["id"],
                        "message_count": 1,
                        "member_count": 1,
                        "thread_metadata": {
                            "archived": False,
                            "auto_archive_duration": 1440,
                            "archive_timestamp": _stamp(MORNING),
                            "locked": False,
                        },
                    }
                )
            self.state._add_guild_from_data(
                {
                    "id": str(guild_id),
                    "name": name,
                    "channels": [{**c, "position": 0, "guild_id": str(guild_id)} for c in channels],
                    "threads": threads,
                    "members": [],
                    "roles": [],
                    "emojis": [],
                    "stickers": [],
                    "features": [],
                    "member_count": 2,
                }
            )

    def dispatched_named(self, event: str) -> list[tuple[Any, ...]]:
        return [args for name, args in self.dispatched if name == event]

    def _last(self, event: str) -> tuple[Any, ...]:
        for name, args in reversed(self.dispatched):
            if name == event:
                return args
        raise AssertionError(f"discord.py dispatched no {event}")

    def payload(
        self,
        mid: int,
        content: str,
        *,
        author: dict = JEFF,
        channel: int = GENERAL,
        guild: int | None = GUILD,
        nick: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(mid),
            "channel_id": str(channel),
            "author": {"discriminator": "0", "avatar": None, **author},
            "content": content,
            "timestamp": _stamp(discord.utils.snowflake_time(mid)),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            **extra,
        }
        if guild is not None:
            data["guild_id"] = str(guild)
            data["member"] = {
                "nick": nick,
                "roles": [],
                "joined_at": _stamp(MORNING),
                "deaf": False,
                "mute": False,
                "flags": 0,
            }
        return data

    def create(self, mid: int, content: str, **fields: Any) -> discord.Message:
        """MESSAGE_CREATE: the `Message` that `on_message` gets."""
        self.state.parse_message_create(self.payload(mid, content, **fields))
        return self._last("message")[0]

    def update(self, mid: int, content: str, edited: datetime | None, **fields: Any) -> Any:
        """MESSAGE_UPDATE: the `RawMessageUpdateEvent` that `on_raw_message_edit` gets
        (`edited` None: an update that is no edit, such as an embed resolved)."""
        stamp = _stamp(edited) if edited is not None else None
        self.state.parse_message_update(
            self.payload(mid, content, edited_timestamp=stamp, **fields)
        )
        return self._last("raw_message_edit")[0]

    def delete(self, mid: int, channel: int = GENERAL, guild: int = GUILD) -> Any:
        """MESSAGE_DELETE: the `RawMessageDeleteEvent` that `on_raw_message_delete` gets."""
        data = {"id": str(mid), "channel_id": str(channel), "guild_id": str(guild)}
        self.state.parse_message_delete(data)
        return self._last("raw_message_delete")[0]


def capture(server, api, tmp_path, **options: Any) -> DiscordCapture:
    client = Client(server.url, token_of(api), Spool(tmp_path / "spool.jsonl"))
    return DiscordCapture(client, self_id=BOT_ID, **options)


def run_daemon(bot: DiscordCapture, daemon) -> Any:
    """Run `daemon(gateway)` on an event loop, as the bot's, then wait for the sending."""

    async def main():
        try:
            found = await daemon(Gateway(asyncio.get_running_loop()))
            return found, await bot.drain()
        finally:
            await bot.aclose()

    return asyncio.run(main())


def test_messages_become_events_with_their_place_and_author(make_client, server, tmp_path):
    api = make_client()
    bot = capture(server, api, tmp_path)
    ids = [snowflake(s) for s in (41, 42, 43, 44)]
    picture = {
        "id": "5",
        "filename": "robe.png",
        "url": "https://cdn/robe.png",
        "proxy_url": "https://cdn/robe.png",
        "content_type": "image/png",
        "size": 9,
    }

    async def daemon(gateway):
        await bot.on_message(gateway.create(ids[0], "go pull on that comfy robe"))
        await bot.on_message(gateway.create(ids[1], "Warm already.", author=LYRA))
        await bot.on_message(
            gateway.create(
                ids[2],
                "",
                channel=THREAD,
                attachments=[picture],
                message_reference={"message_id": str(ids[0]), "channel_id": str(GENERAL)},
            )
        )
        await bot.on_message(gateway.create(ids[3], "just us", guild=None, channel=DM))
        await bot.on_message(gateway.create(ids[0], "go pull on that comfy robe"))  # twice

    _, done = run_daemon(bot, daemon)
    assert done.error is None and done.pending == 0
    stored = {e["event_uid"]: e for e in all_events(api)}
    assert sorted(stored) == sorted(f"discord:{i}" for i in ids)
    first = stored[f"discord:{ids[0]}"]
    assert (first["channel"], first["author"], first["role"]) == ("discord", "jeff", "user")
    assert first["created_at"] == "2026-01-04T14:30:41.000000Z"
    assert first["session_id"] == "discord:222"
    assert first["metadata"]["guild_id"] == "111" and first["metadata"]["channel_name"] == "general"
    assert stored[f"discord:{ids[1]}"]["role"] == "assistant"
    threaded = stored[f"discord:{ids[2]}"]
    assert threaded["content"] == "[attachments: robe.png]"
    assert threaded["metadata"]["thread_id"] == "333"
    assert threaded["metadata"]["channel_id"] == "222"
    assert threaded["metadata"]["reply_to"] == str(ids[0])
    assert threaded["metadata"]["attachments"][0]["url"] == "https://cdn/robe.png"
    assert threaded["session_id"] == "discord:333"
    direct = stored[f"discord:{ids[3]}"]
    assert "guild_id" not in direct["metadata"] and direct["session_id"] == "discord:444"


def test_one_person_is_one_author_whatever_they_are_called(make_client, server, tmp_path):
    api = make_client()
    bot = capture(server, api, tmp_path)
    ids = [snowflake(s) for s in (1, 2, 3, 4)]

    async def daemon(gateway):
        await bot.on_message(gateway.create(ids[0], "robe on", nick="Jeffrey of Hearth"))
        await bot.on_message(
            gateway.create(ids[1], "in the workshop", guild=OTHER_GUILD, channel=223, nick="J")
        )
        await bot.on_message(gateway.create(ids[2], "just us", guild=None, channel=DM))
        renamed = {**JEFF, "global_name": "Jeff the Robed"}
        await bot.on_message(gateway.create(ids[3], "new look", author=renamed))

    run_daemon(bot, daemon)
    stored = all_events(api)
    assert [e["author"] for e in stored] == ["jeff"] * 4
    assert {e["metadata"]["author_id"] for e in stored} == {"42"}
    shown = [e["metadata"].get("author_display_name") for e in stored]
    assert shown == ["Jeffrey of Hearth", "J", "Jeff", "Jeff the Robed"]
    assert stored[0]["metadata"]["author_nick"] == "Jeffrey of Hearth"
    assert stored[0]["metadata"]["author_global_name"] == "Jeff"


def test_edits_and_deletions_are_events_too(make_client, server, tmp_path):
    api = make_client()
    bot = capture(server, api, tmp_path)
    mid = snowflake(20)
    edited = datetime(2026, 1, 4, 15, 0, tzinfo=UTC)

    async def daemon(gateway):
        await bot.on_message(gateway.create(mid, "the robe is blue"))
        await bot.on_raw_message_edit(gateway.update(mid, "the robe is green", edited))
        resolved = gateway.update(mid, "the robe is green", edited)  # an embed resolved
        assert resolved.cached_message is not None
        assert await bot.on_raw_message_edit(resolved) is None
        await bot.on_raw_message_delete(gateway.delete(mid))
        await bot.on_raw_message_delete(gateway.delete(mid))  # not cached any more

    run_daemon(bot, daemon)
    stored = all_events(api)
    assert [e["event_type"] for e in stored] == ["message", "edit", "delete"]
    edit = stored[1]
    assert edit["created_at"] == "2026-01-04T15:00:00.000000Z"
    assert edit["metadata"]["replaces"] == f"discord:{mid}"
    assert stored[2]["event_uid"] == f"discord:{mid}:delete"
    assert stored[2]["metadata"]["deletes"] == f"discord:{mid}"
    # A message deleted in Discord is forgotten: every version is a tombstone (who, where,
    # when, what it names), its text gone, the edit's previous_content with it.
    assert [e["content"] for e in stored] == ["", "", ""]
    assert "robe" not in str(stored)
    assert all(e["deleted_at"] for e in stored[:2])
    (tombstone,) = api.get("/v1/forget").json()["tombstones"]
    assert (tombstone["ref"], tombstone["asked_by"]) == (f"discord:{mid}", "discord")


def test_an_edit_of_a_message_sent_before_the_bot_started_supersedes_it(
    make_client, server, tmp_path
):
    """discord.py has no cached copy of a message from before the bot started (or older
    than its cache): only on_raw_message_edit hears of its edit."""
    api = make_client()
    bot = capture(server, api, tmp_path)
    mid = snowflake(30)
    edited = datetime(2026, 1, 4, 16, 0, tzinfo=UTC)

    async def daemon(gateway):
        await bot.on_message(gateway.create(mid, "the heron robe is blue"))
        later = Gateway(asyncio.get_running_loop())  # the bot restarted: its cache is empty
        unstamped = later.update(mid, "the heron robe is blue", None)  # an embed resolved
        assert unstamped.cached_message is None
        assert await bot.on_raw_message_edit(unstamped) is None
        edit = later.update(mid, "the heron robe is grey", edited)
        assert edit.cached_message is None and not later.dispatched_named("message_edit")
        return await bot.on_raw_message_edit(edit)

    event, _ = run_daemon(bot, daemon)
    assert event["metadata"]["previous_content"] is None
    assert event["metadata"]["replaces"] == f"discord:{mid}"
    found = api.post("/v1/search", json={"query": "heron robe", "tiers": "longform"}).json()
    assert [r["text"] for r in found["results"]] == ["the heron robe is grey"]
    stored = {e["content"]: e for e in all_events(api)}
    assert stored["the heron robe is blue"]["replaced_by"] == event["event_uid"]


def test_a_handler_returns_while_the_service_never_answers(make_client, tmp_path):
    api = make_client()
    hung = socket.create_server(("127.0.0.1", 0))  # accepts connections, never answers
    url = f"http://127.0.0.1:{hung.getsockname()[1]}"
    client = Client(url, token_of(api), Spool(tmp_path / "spool.jsonl"), timeout=300)
    bot = DiscordCapture(client, self_id=BOT_ID)

    async def daemon():
        gateway = Gateway(asyncio.get_running_loop())
        try:
            # Waiting on the service would take the client's 300 s timeout.
            event = await asyncio.wait_for(bot.on_message(gateway.create(1, "hello?")), 10)
            assert event["event_uid"] == "discord:1"
            assert client.spool.pending() == 1  # on disk before the handler returned
            assert bot.last is None  # the flush is still waiting on the service
            hung.close()  # the queued connection is reset: the flush fails, keeps it
            return await bot.drain()
        finally:
            await bot.aclose()

    done = asyncio.run(daemon())
    assert done.error and "unreachable" in done.error and done.pending == 1


def test_a_burst_is_one_orderly_send_without_false_errors(make_client, server, tmp_path):
    api = make_client()
    bot = capture(server, api, tmp_path)
    ids = [snowflake(s) for s in range(31)]

    async def daemon(gateway):
        messages = [gateway.create(i, f"line {n}") for n, i in enumerate(ids)]
        return await asyncio.gather(*(bot.on_message(m) for m in messages))

    handed, done = run_daemon(bot, daemon)
    assert [e["event_uid"] for e in handed] == [f"discord:{i}" for i in ids]
    assert (done.error, done.stored, done.pending) == (None, 31, 0)
    assert bot.last is not None and bot.last.error is None
    assert [e["content"] for e in all_events(api)] == [f"line {n}" for n in range(31)]


def test_a_daemon_keeps_running_while_pps_is_down_and_catches_up_alone(tmp_path):
    with AppServer(tmp_path / "data") as server:
        token = entities.create(server.db, "lyra")
        server.stop()
        client = Client(server.url, token, Spool(tmp_path / "spool.jsonl"), timeout=5)
        bot = DiscordCapture(client, self_id=BOT_ID, retry_s=0.1)
        loop = asyncio.new_event_loop()  # the bot's loop, in its own thread as a daemon's
        running = threading.Thread(target=loop.run_forever, daemon=True)
        running.start()

        def on_loop(coroutine_function, *args):
            async def call():
                return await coroutine_function(*args)

            return asyncio.run_coroutine_threadsafe(call(), loop).result(timeout=60)

        try:
            gateway = Gateway(loop)
            event = on_loop(bot.on_message, gateway.create(3001, "are you there?"))
            assert event["event_uid"] == "discord:3001"
            done = on_loop(bot.drain)
            assert done.error and "unreachable" in done.error and done.pending == 1
            server.start()  # no new message: the sender tries again by itself
            wait_for(lambda: stored_uids(server) == ["discord:3001"], what="the retry")
            assert wait_for(lambda: bot.last and bot.last.pending == 0 and bot.last.error is None)
        finally:
            on_loop(bot.aclose)
            loop.call_soon_threadsafe(loop.stop)
            running.join(timeout=10)
            loop.close()
            client.close()


def stored_uids(server: AppServer) -> list[str]:
    with sqlite3.connect(server.data_dir / "pps.sqlite3") as db:
        return [r[0] for r in db.execute("SELECT event_uid FROM events ORDER BY id")]


def test_message_event_needs_no_network():
    async def build():
        gateway = Gateway(asyncio.get_running_loop())
        return message_event(gateway.create(4001, "hi", author=LYRA), self_id=BOT_ID)

    event = asyncio.run(build())
    assert event["event_uid"] == "discord:4001" and event["role"] == "assistant"
    assert event["author"] == "lyra" and event["metadata"]["author_is_bot"] is True


def test_an_edit_supersedes_and_a_deletion_tombstones(make_client, server, tmp_path):
    api = make_client()
    bot = capture(server, api, tmp_path)
    robe, seat = snowflake(50), snowflake(51)

    async def daemon(gateway):
        await bot.on_message(gateway.create(robe, "the pelican robe is blue"))
        await bot.on_message(gateway.create(seat, "a pelican saved you a seat"))
        for minute, colour in ((0, "green"), (5, "golden")):
            moment = datetime(2026, 1, 4, 15, minute, tzinfo=UTC)
            await bot.on_raw_message_edit(
                gateway.update(robe, f"the pelican robe is {colour}", moment)
            )
        await bot.on_raw_message_delete(gateway.delete(seat))

    run_daemon(bot, daemon)
    # Search and recall know the newest text only, and nothing of the deleted message.
    found = api.post("/v1/search", json={"query": "pelican", "tiers": "longform"}).json()
    assert [r["text"] for r in found["results"]] == ["the pelican robe is golden"]
    raw = api.get("/v1/events/search", params={"q": "pelican"}).json()["results"]
    assert [hit["event"]["content"] for hit in raw] == ["the pelican robe is golden"]
    answer = api.post("/v1/recall", json={"context": "startup"}).json()
    turns = [i["text"] for i in answer["items"] if i["layer"] == "unsummarized"]
    assert answer["unsummarized"] == 1 and len(turns) == 1
    assert turns[0].endswith("jeff: the pelican robe is golden")
    assert "blue" not in answer["context"] and "seat" not in answer["context"]
    # Layer 1 keeps every version of the edited message, marked; the deleted message is
    # forgotten: a tombstone without its text.
    events = all_events(api)
    stored = {e["content"]: e for e in events}
    golden = stored["the pelican robe is golden"]
    assert (golden["replaced_by"], golden["deleted_at"]) == (None, None)
    for old in ("the pelican robe is blue", "the pelican robe is green"):
        assert stored[old]["replaced_by"] == golden["event_uid"]
    deleted = next(e for e in events if e["event_uid"] == f"discord:{seat}")
    deletion = next(e for e in events if e["event_type"] == "delete")
    assert deleted["deleted_at"] == deletion["created_at"] and deleted["replaced_by"] is None
    assert deleted["content"] == "" and "seat" not in str(events)


def test_a_deletion_that_arrives_first_still_tombstones(make_client):
    api = make_client()
    deletion = {
        "event_uid": "discord:77:delete",
        "channel": "discord",
        "event_type": "delete",
        "content": "message 77 was deleted",
        "metadata": {"deletes": "discord:77"},
    }
    late = {"event_uid": "discord:77", "channel": "discord", "content": "a pelican, sent late"}
    assert api.post("/v1/events", json=[deletion]).status_code == 200
    assert api.post("/v1/events", json=[late]).status_code == 200
    found = api.post("/v1/search", json={"query": "pelican", "tiers": "longform"}).json()
    assert found["results"] == []
    assert next(e for e in all_events(api) if e["event_uid"] == "discord:77")["deleted_at"]


def test_a_deleted_or_replaced_message_is_no_news_in_another_channel(make_client):
    """Recall from the terminal shows what happened meanwhile on Discord: the edited
    message's newest text only, and nothing of a deleted one."""
    api = make_client()
    events = [
        {"event_uid": "discord:80", "channel": "discord", "content": "the kettle is blue"},
        {
            "event_uid": "discord:80:edit:1",
            "channel": "discord",
            "event_type": "edit",
            "content": "the kettle is green",
            "metadata": {"replaces": "discord:80"},
        },
        {"event_uid": "discord:81", "channel": "discord", "content": "a secret I took back"},
        {
            "event_uid": "discord:81:delete",
            "channel": "discord",
            "event_type": "delete",
            "content": "message 81 was deleted",
            "metadata": {"deletes": "discord:81"},
        },
    ]
    assert api.post("/v1/events", json=events).status_code == 200
    answer = api.post("/v1/recall", json={"context": "kettle", "channel": "terminal"}).json()
    shown = [(i["layer"], i["text"]) for i in answer["items"]]
    assert any("the kettle is green" in text for _, text in shown), shown
    assert not any("blue" in text or "took back" in text for _, text in shown), shown

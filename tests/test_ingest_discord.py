"""The Discord adapter, driven the way a discord.py daemon drives it, with objects built
here (the attributes discord.py's Message, Thread, Attachment and raw delete payload
carry), against a real server: messages, edits and deletions become events, once."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from types import SimpleNamespace as Obj

from ingest.client import Client
from ingest.discord import DiscordCapture, message_event
from ingest.spool import Spool
from tests.fixtures_ingest import all_events, token_of

BOT_ID = 9001
GUILD = Obj(id=111, name="Hearth")
GENERAL = Obj(id=222, name="general")
THREAD = Obj(id=333, name="robe-talk", parent=GENERAL, parent_id=GENERAL.id)
JEFF = Obj(id=42, name="jeff", display_name="Jeff", bot=False)
LYRA = Obj(id=BOT_ID, name="lyra", display_name="Lyra", bot=True)


def message(mid, content, *, author=JEFF, channel=GENERAL, guild=GUILD, **extra):
    fields = {
        "id": mid,
        "content": content,
        "author": author,
        "channel": channel,
        "guild": guild,
        "created_at": datetime(2026, 1, 4, 14, 30, mid % 60, tzinfo=UTC),
        "edited_at": None,
        "attachments": [],
        "embeds": [],
        "stickers": [],
        "reference": None,
    }
    return Obj(**{**fields, **extra})


def capture(server, api, tmp_path) -> DiscordCapture:
    client = Client(server.url, token_of(api), Spool(tmp_path / "spool.jsonl"))
    return DiscordCapture(client, self_id=BOT_ID)


def test_messages_become_events_with_their_place_and_author(make_client, server, tmp_path):
    api = make_client()
    bot = capture(server, api, tmp_path)
    picture = Obj(
        id=5, filename="robe.png", url="https://cdn/robe.png", content_type="image/png", size=9
    )

    async def daemon():
        await bot.on_message(message(1001, "go pull on that comfy robe"))
        await bot.on_message(message(1002, "Warm already.", author=LYRA))
        await bot.on_message(
            message(1003, "", channel=THREAD, attachments=[picture], reference=Obj(message_id=1001))
        )
        await bot.on_message(message(1004, "just us", guild=None, channel=Obj(id=444)))
        await bot.on_message(message(1001, "go pull on that comfy robe"))  # delivered twice

    asyncio.run(daemon())
    stored = {e["event_uid"]: e for e in all_events(api)}
    assert sorted(stored) == ["discord:1001", "discord:1002", "discord:1003", "discord:1004"]
    first = stored["discord:1001"]
    assert (first["channel"], first["author"], first["role"]) == ("discord", "Jeff", "user")
    assert first["created_at"] == "2026-01-04T14:30:41.000000Z"
    assert first["session_id"] == "discord:222"
    assert first["metadata"]["guild_id"] == "111" and first["metadata"]["channel_name"] == "general"
    assert stored["discord:1002"]["role"] == "assistant"
    threaded = stored["discord:1003"]
    assert threaded["content"] == "[attachments: robe.png]"
    assert threaded["metadata"]["thread_id"] == "333"
    assert threaded["metadata"]["channel_id"] == "222"
    assert threaded["metadata"]["reply_to"] == "1001"
    assert threaded["metadata"]["attachments"][0]["url"] == "https://cdn/robe.png"
    assert threaded["session_id"] == "discord:333"
    direct = stored["discord:1004"]
    assert "guild_id" not in direct["metadata"] and direct["session_id"] == "discord:444"


def test_edits_and_deletions_are_events_too(make_client, server, tmp_path):
    api = make_client()
    bot = capture(server, api, tmp_path)
    before = message(2001, "the robe is blue")
    after = message(2001, "the robe is green", edited_at=datetime(2026, 1, 4, 15, 0, tzinfo=UTC))
    unchanged = message(2001, "the robe is green", edited_at=after.edited_at)

    async def daemon():
        await bot.on_message(before)
        assert await bot.on_message_edit(after, unchanged) is None  # an embed resolved
        await bot.on_message_edit(before, after)
        await bot.on_raw_message_delete(
            Obj(message_id=2001, channel_id=222, guild_id=111, cached_message=None)
        )
        await bot.on_raw_message_delete(Obj(message_id=2001, cached_message=after))

    asyncio.run(daemon())
    stored = all_events(api)
    assert [e["event_type"] for e in stored] == ["message", "edit", "delete"]
    edit = stored[1]
    assert edit["content"] == "the robe is green"
    assert edit["metadata"]["previous_content"] == "the robe is blue"
    assert edit["created_at"] == "2026-01-04T15:00:00.000000Z"
    assert stored[2]["event_uid"] == "discord:2001:delete"
    assert stored[2]["metadata"]["channel_id"] == "222"


def test_a_daemon_keeps_running_while_pps_is_down(make_client, server, tmp_path):
    api = make_client()
    down = Client("http://127.0.0.1:9", token_of(api), Spool(tmp_path / "spool.jsonl"))
    bot = DiscordCapture(down, self_id=BOT_ID)
    result = asyncio.run(bot.on_message(message(3001, "are you there?")))
    assert result.error and result.pending == 1
    with Client(server.url, token_of(api), Spool(tmp_path / "spool.jsonl")) as up:
        assert up.flush().stored == 1
    assert [e["event_uid"] for e in all_events(api)] == ["discord:3001"]


def test_message_event_needs_no_network():
    event = message_event(message(4001, "hi", author=LYRA), self_id=BOT_ID)
    assert event["event_uid"] == "discord:4001" and event["role"] == "assistant"
    assert event["metadata"]["author_is_bot"] is True

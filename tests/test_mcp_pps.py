"""The /mcp profile (the pps seed's tools) through a real MCP client session."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from tests.mcp_client import ToolFailed, call, session

EXPECTED = {
    "store_event",
    "raw_search",
    "get_turns_since_summary",
    "get_turns_since",
    "get_turns_around",
    "store_summary",
    "summarize_messages",
    "get_recent_summaries",
    "search_summaries",
    "summary_stats",
    "inventory_list",
    "inventory_add",
    "inventory_get",
    "inventory_delete",
    "inventory_categories",
    "enter_space",
    "list_spaces",
    "add_space",
    "update_space",
    "ingestion_stats",
    "pps_health",
    "validate_retrieval_chain",
}


@pytest.fixture
def mcp(server, make_client):
    """mcp(script) runs an async script in a session of a new entity: (client, entity)."""

    def run(script, http_client=None):
        http_client = http_client or make_client()
        token = http_client.headers["Authorization"].removeprefix("Bearer ")
        return session(f"{server.url}/mcp", token, script)

    return run


def test_tools_are_listed_with_descriptions_and_annotations(mcp):
    async def script(client):
        return client.server_info, (await client.list_tools()).tools

    server_info, listed = mcp(script)
    assert (server_info.name, server_info.version) == ("pps", version("pps"))
    tools = {tool.name: tool for tool in listed}
    assert set(tools) >= EXPECTED
    for tool in tools.values():
        assert len(tool.description) > 30, tool.name
        assert tool.annotations is not None, tool.name
        # the docstring's indentation is not part of the description
        assert not any(line.startswith(" ") for line in tool.description.splitlines())
    assert tools["raw_search"].annotations.read_only_hint is True
    assert tools["inventory_delete"].annotations.destructive_hint is True


def test_capture_search_and_read_around(mcp):
    async def script(client):
        stored = await call(
            client,
            "store_event",
            content="the comfy robe by the fire",
            event_uid="m-1",
            author="jeff",
            created_at="2026-01-04T12:00:00Z",
        )
        again = await call(
            client, "store_event", content="the comfy robe by the fire", event_uid="m-1"
        )
        await call(
            client, "store_event", content="then the kitchen", created_at="2026-01-04T12:01:00Z"
        )
        found = await call(client, "raw_search", query="robe")
        around = await call(client, "get_turns_around", timestamp="2026-01-04T12:00:30Z", count=4)
        return stored, again, found, around

    stored, again, found, around = mcp(script)
    assert again == {**stored, "duplicate": True}
    assert [r["event"]["event_uid"] for r in found["results"]] == ["m-1"]
    assert [t["content"] for t in around["turns"]] == [
        "the comfy robe by the fire",
        "then the kitchen",
    ]


def test_summaries_flow(mcp):
    async def script(client):
        ids = [(await call(client, "store_event", content=f"turn {n}"))["id"] for n in range(4)]
        todo = await call(client, "summarize_messages", limit=3)
        stored = await call(
            client,
            "store_summary",
            summary_text="four turns about turns",
            start_id=todo["start_id"],
            end_id=todo["end_id"],
        )
        left = await call(client, "get_turns_since_summary")
        stats = await call(client, "summary_stats")
        recent = await call(client, "get_recent_summaries", limit=2)
        hits = await call(client, "search_summaries", query="turns")
        since = await call(client, "get_turns_since", timestamp="2000-01-01T00:00:00Z")
        return ids, todo, stored, left, stats, recent, hits, since

    ids, todo, stored, left, stats, recent, hits, since = mcp(script)
    assert todo["summarized"] is False and "store_summary" in todo["message"]
    assert (todo["start_id"], todo["end_id"]) == (ids[0], ids[2])
    assert stored["event_count"] == 3
    assert [t["id"] for t in left["turns"]] == [ids[3]] and left["unsummarized"] == 1
    assert stats["summaries"] == 1 and stats["unsummarized"] == 1
    assert [s["id"] for s in recent["summaries"]] == [stored["id"]]
    assert hits["results"][0]["summary"]["id"] == stored["id"]
    assert len(since["turns"]) == 4 and len(since["summaries"]) == 1


def test_anchors_flow(mcp):
    async def script(client):
        saved = await call(
            client,
            "anchor_save",
            title="One Stream",
            content="Many channels, one river: every self merges back.",
            tags=["identity"],
        )
        found = await call(client, "anchor_search", query="rivers and channels merging")
        listed = await call(client, "anchor_list")
        resynced = await call(client, "anchor_resync")
        deleted = await call(client, "anchor_delete", name=saved["name"])
        after = await call(client, "anchor_list")
        with pytest.raises(ToolFailed) as escape:
            await call(client, "anchor_delete", name="../../pps.sqlite3")
        return saved, found, listed, resynced, deleted, after, str(escape.value)

    saved, found, listed, resynced, deleted, after, escape = mcp(script)
    assert saved["path"].startswith("word_photos/")
    assert found["results"][0]["path"] == saved["path"]
    assert [a["title"] for a in listed["anchors"]] == ["One Stream"]
    assert resynced["errors"] == []
    assert deleted == {"deleted": saved["name"]} and after["anchors"] == []
    assert "name" in escape


def test_texture_tools_say_when_the_graph_is_off(mcp):
    async def script(client):
        found = await call(client, "texture_search", query="robe")
        explored = await call(client, "texture_explore", entity_name="Jeff")
        queued = await call(client, "texture_add", content="Jeff gave Lyra the blue robe.")
        triplet = await call(
            client,
            "texture_add_triplet",
            source="Jeff",
            relationship="GAVE",
            target="Lyra",
            fact="Jeff gave Lyra the blue robe",
        )
        stats = await call(client, "ingestion_stats")
        recalled = await call(client, "ambient_recall", context="the blue robe")
        with pytest.raises(ToolFailed) as bad:
            await call(
                client,
                "texture_add_triplet",
                source="Jeff",
                relationship="no spaces!",
                target="Lyra",
                fact="x",
            )
        return found, explored, queued, triplet, stats, recalled, str(bad.value)

    found, explored, queued, triplet, stats, recalled, bad = mcp(script)
    assert found["facts"] == [] and found["status"] == "disabled"
    assert explored["status"] == "disabled"
    assert queued["event_uid"] and triplet["event_uid"]  # kept in raw capture for later
    assert stats["queue"]["counts"]
    assert recalled["manifest"]["graph"]["status"] == "down"
    assert "relationship" in bad


def test_crystals_flow(mcp):
    async def script(client):
        for n in range(1, 4):
            await call(client, "crystallize", content=f"Field: warm. Seeds: {n}")
        current = await call(client, "get_crystals", count=2)
        listed = await call(client, "crystal_list")
        removed = await call(client, "crystal_delete")
        after = await call(client, "crystal_list")
        with pytest.raises(ToolFailed) as empty:
            await call(client, "crystallize", content="  ")
        return current, listed, removed, after, str(empty.value)

    current, listed, removed, after, empty = mcp(script)
    assert [c["number"] for c in current["crystals"]] == [2, 3]
    assert "[Chain: #1 → #2 → #3]" in current["crystals"][1]["content"]
    assert [c["path"] for c in listed["crystals"]] == [
        "crystals/crystal_001.md",
        "crystals/crystal_002.md",
        "crystals/crystal_003.md",
    ]
    assert removed["number"] == 3 and len(after["crystals"]) == 2
    assert "content" in empty


def test_inventory_and_spaces(mcp):
    async def script(client):
        await call(client, "add_space", name="bedroom", description="Quiet.", channel="terminal")
        await call(
            client,
            "inventory_add",
            name="comfy robe",
            category="wardrobe",
            attributes={"colour": "blue"},
            space="bedroom",
        )
        listed = await call(client, "inventory_list", category="wardrobe")
        got = await call(client, "inventory_get", name="comfy robe")
        room = await call(client, "enter_space", space_name="bedroom")
        cats = await call(client, "inventory_categories")
        updated = await call(client, "update_space", name="bedroom", description="Moonlit.")
        spaces = await call(client, "list_spaces")
        gone = await call(client, "inventory_delete", name="comfy robe")
        return listed, got, room, cats, updated, spaces, gone

    listed, got, room, cats, updated, spaces, gone = mcp(script)
    assert [i["name"] for i in listed["items"]] == ["comfy robe"]
    assert got["attributes"] == {"colour": "blue"}
    assert [i["name"] for i in room["items"]] == ["comfy robe"]
    assert cats["categories"][0]["category"] == "wardrobe"
    assert updated["description"] == "Moonlit."
    assert [s["name"] for s in spaces["spaces"]] == ["bedroom"]
    assert gone["name"] == "comfy robe"


@pytest.mark.parametrize(
    ("tool", "arguments", "words"),
    [
        ("store_event", {"content": ""}, "content"),
        ("store_event", {"content": "x", "channel": "NOT OK"}, "channel"),
        ("store_event", {"content": "x", "created_at": "whenever"}, "created_at"),
        ("raw_search", {"query": "!!!"}, "query"),
        ("get_turns_since_summary", {"limit": 0}, "limit"),
        ("get_turns_since", {"timestamp": "soon"}, "timestamp"),
        ("store_summary", {"summary_text": "x", "start_id": 1, "end_id": 999999}, "id"),
        ("inventory_get", {"name": "ghost"}, "not found"),
        ("enter_space", {"space_name": "attic"}, "not found"),
        ("inventory_add", {"name": "x", "category": "BAD CATEGORY!"}, "category"),
    ],
)
def test_bad_arguments_are_tool_errors_that_say_why(mcp, tool, arguments, words):
    async def script(client):
        with pytest.raises(ToolFailed) as failed:
            await call(client, tool, **arguments)
        return str(failed.value)

    assert words in mcp(script)


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("raw_search", {"query": "robe", "limit": "many"}, "limit: must be a whole number"),
        ("raw_search", {"query": "robe", "limit": 2.5}, "limit: must be a whole number"),
        ("raw_search", {}, "query: required"),
        ("raw_search", {"query": None}, "query: must be a string, not null"),
        ("raw_search", {"query": 5}, "query: must be a string, not a number"),
        ("raw_search", {"query": "robe", "limt": 5}, "limt: unknown argument"),
        ("store_event", {"content": "x", "metadata": "nope"}, "metadata: must be a JSON object"),
        ("store_event", {"content": "x", "metadata": [1]}, "metadata: must be a JSON object"),
        ("ambient_recall", {"context": "x", "trace": "maybe"}, "trace: must be true or false"),
        ("raw_search", {"query": "robe", "limit": 0}, "limit: must be greater than or equal"),
    ],
)
def test_argument_errors_are_plain_messages_naming_the_argument(mcp, tool, arguments, expected):
    """What an agent reads when it passes a string for a number, leaves one out, or
    misspells one: the argument and what it must be, as engine errors read; not a
    validation library's report with its type codes and documentation links."""

    async def script(client):
        with pytest.raises(ToolFailed) as failed:
            await call(client, tool, **arguments)
        return str(failed.value)

    message = mcp(script)
    assert message.startswith(f"Error executing tool {tool}: invalid input: "), message
    assert expected in message
    for jargon in ("http", "pydantic", "validation error", "[type=", "Arguments"):
        assert jargon not in message, message
    assert "\n" not in message  # one line


def test_another_entitys_ids_and_names_are_invisible(mcp, make_client):
    owner = make_client()

    async def plant(client):
        ids = [
            (await call(client, "store_event", content=f"secret robe {n}"))["id"] for n in range(2)
        ]
        await call(client, "add_space", name="vault")
        await call(client, "inventory_add", name="key", category="symbols", space="vault")
        return ids

    ids = mcp(plant, owner)

    async def snoop(client):
        errors = []
        for tool, arguments in [
            ("store_summary", {"summary_text": "mine now", "start_id": ids[0], "end_id": ids[1]}),
            ("inventory_get", {"name": "key"}),
            ("inventory_delete", {"name": "key"}),
            ("enter_space", {"space_name": "vault"}),
            ("update_space", {"name": "vault", "description": "taken"}),
        ]:
            with pytest.raises(ToolFailed) as failed:
                await call(client, tool, **arguments)
            errors.append(str(failed.value))
        found = await call(client, "raw_search", query="secret robe")
        left = await call(client, "get_turns_since_summary")
        return errors, found, left

    errors, found, left = mcp(snoop)
    assert all("not found" in e or "no event" in e for e in errors), errors
    assert found["results"] == [] and left["turns"] == []

    async def check(client):
        return await call(client, "inventory_get", name="key")

    assert mcp(check, owner)["space"] == "vault"


def test_health_tool(mcp):
    async def script(client):
        return await call(client, "pps_health")

    assert mcp(script)["components"]["database"]["status"] == "ok"


def test_ambient_recall_never_returns_the_message_it_answers(mcp):
    async def script(client):
        said = "the lighthouse keeper painted the door blue"
        stored = await call(client, "store_event", content=said, event_uid="msg-1")
        plain = await call(client, "ambient_recall", context=said, channel="discord")
        answering = await call(
            client, "ambient_recall", context=said, channel="discord", answering=["msg-1"]
        )
        return stored, plain, answering

    stored, plain, answering = mcp(script)
    assert stored["event_uid"] == "msg-1"
    uids = [item["source"].get("event_uid") for item in plain["items"]]
    assert "msg-1" in uids  # found when the caller does not say it is answering it
    assert "msg-1" not in [item["source"].get("event_uid") for item in answering["items"]]

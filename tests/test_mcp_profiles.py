"""The seed profiles through real MCP client sessions: /mcp/wordwalker (search, store),
/mcp/openclaw (memory_search, memory_get) and /mcp/shared-memory (memory_search,
memory_add, memory_update, memory_forget, memory_stats), each tool with good and bad
arguments, and another entity's memory out of reach through every one of them."""

from __future__ import annotations

import logging

import httpx
import pytest

from mcp_bridge import mount
from pps.http.deps import EMPTY_TOKEN
from tests.conftest import wait_for
from tests.mcp_client import ToolFailed, call, session
from tests.searching import home, write

PROFILES = {
    "wordwalker": {"search", "store"},
    "openclaw": {"memory_search", "memory_get"},
    "shared-memory": {
        "memory_search",
        "memory_add",
        "memory_update",
        "memory_forget",
        "memory_stats",
    },
}


@pytest.fixture
def mcp(server, make_client):
    """mcp(profile, script, http_client=None) runs an async script in a session of a new
    entity (or of `http_client`'s) on that profile."""

    def run(profile, script, http_client=None):
        http_client = http_client or make_client()
        token = http_client.headers["Authorization"].removeprefix("Bearer ")
        return session(f"{server.url}/mcp/{profile}", token, script)

    return run


def failure(profile, mcp, tool, client=None, **arguments) -> str:
    """The error text of a tool call that must fail."""

    async def script(session_):
        with pytest.raises(ToolFailed) as failed:
            await call(session_, tool, **arguments)
        return str(failed.value)

    return mcp(profile, script, client)


def calling(profile, mcp, client, tool, **arguments):
    async def script(session_):
        return await call(session_, tool, **arguments)

    return mcp(profile, script, client)


# --- every profile ---------------------------------------------------------------------


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_each_profile_lists_exactly_its_seed_tools(mcp, profile):
    async def script(client):
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in mcp(profile, script)}
    assert set(tools) == PROFILES[profile]
    for tool in tools.values():
        assert len(tool.description) > 80, tool.name
        assert tool.annotations is not None, tool.name
        read_only = tool.name in ("search", "memory_search", "memory_get", "memory_stats")
        assert tool.annotations.read_only_hint is read_only, tool.name
    if profile == "openclaw":
        get = tools["memory_get"].input_schema["properties"]
        assert set(get) == {"path", "from", "lines"}
        assert tools["memory_search"].input_schema["properties"]["maxResults"]["default"] == 6
    if profile == "shared-memory":
        assert tools["memory_forget"].annotations.destructive_hint is True
        forget = tools["memory_forget"].input_schema["properties"]
        assert forget["dry_run"]["default"] is True


@pytest.mark.parametrize("path", sorted(path for path, _ in mount.PROFILES.values()))
def test_each_profile_needs_a_valid_token(server, path):
    wrong = 'Bearer error="invalid_token", error_description="unknown or revoked token"'
    for header, challenge in [
        (None, "Bearer"),
        ("Basic dXNlcjpwdw==", "Bearer"),  # no bearer token: nothing to call invalid
        ("Bearer pps_wrong", wrong),
        (b"Bearer \xff\xfe\xc3(", wrong),  # not UTF-8 (was a 500); /v1 answers the same
        # `Bearer $(cat FILE)` of a missing file (issue 27): a bare challenge, which MCP
        # clients show as a failed connection; now why, on /mcp and /v1 alike.
        ("Bearer", f'Bearer error="invalid_token", error_description="{EMPTY_TOKEN}"'),
    ]:
        for prefix in (path, "/v1/events"):
            response = httpx.post(
                f"{server.url}{prefix}",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Authorization": header} if header is not None else {},
            )
            assert response.status_code == 401, (prefix, header, response.text)
            assert response.json()["problems"][0]["field"] == "Authorization"
            assert response.headers["WWW-Authenticate"] == challenge, (prefix, header)


def test_a_stateless_request_logs_no_session_ending(server, client, caplog):
    """Every MCP request is its own: the SDK's `Terminating session: None` line, once a
    request from a client of the 2025 protocol versions (Claude Code's, a plain POST),
    said nothing (there is no session) and is not logged."""
    caplog.set_level(logging.INFO)
    for version in (None, "2025-06-18"):
        headers = {"Accept": "application/json, text/event-stream"}
        if version:
            headers["MCP-Protocol-Version"] = version
        listed = client.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers
        )
        assert listed.status_code == 200 and listed.json()["result"]["tools"], listed.text
    messages = [record.getMessage() for record in caplog.records]
    assert not [m for m in messages if m.startswith("Terminating session")], messages


# --- Word Walker ---------------------------------------------------------------------


def test_wordwalker_store_writes_a_dated_fragment_found_at_once(server, mcp, make_client):
    client = make_client()
    client.post(
        "/v1/events",
        json={"content": "We planned the Christmas gifts: a telescope for Sam.", "channel": "chat"},
    ).raise_for_status()

    async def script(session_):
        stored = await call(
            session_,
            "store",
            text="Doctrine: ship small, ship often; never ship on a Friday.",
            category="doctrine",
            tags=["Shipping", "release"],
        )
        other = await call(
            session_, "store", text="Sam loves astronomy.", category="relationship", tags=["sam"]
        )
        anywhere = await call(session_, "search", query="when should we ship releases")
        bucket = await call(session_, "search", query="ship", category="doctrine")
        tagged = await call(session_, "search", query="who likes stars", tags=["sam"])
        longform = await call(session_, "search", query="christmas telescope", tiers="longform")
        later = await call(session_, "search", query="ship", since="2999-01-01")
        today = await call(session_, "search", query="ship", date=stored["date"], limit=1)
        return stored, other, anywhere, bucket, tagged, longform, later, today

    stored, other, anywhere, bucket, tagged, longform, later, today = mcp(
        "wordwalker", script, client
    )
    month = stored["date"][:7]
    assert stored["path"].startswith(f".brain/fragments/doctrine/{month}/{stored['date']}_doctrine")
    assert stored["tags"] == ["shipping", "release"]
    on_disk = (home(server, client) / stored["path"]).read_text()
    assert "never ship on a Friday" in on_disk and "category: doctrine" in on_disk
    assert anywhere["results"][0]["path"] == stored["path"]
    assert 0 < anywhere["results"][0]["score"] <= 1
    assert [r["path"] for r in bucket["results"]] == [stored["path"]]
    assert [r["path"] for r in tagged["results"]] == [other["path"]]
    assert longform["results"][0]["channel"] == "chat" and "path" not in longform["results"][0]
    assert later["results"] == []
    assert len(today["results"]) == 1


@pytest.mark.parametrize(
    ("tool", "arguments", "words"),
    [
        ("store", {"text": "x", "category": "work", "tags": []}, "tags"),
        ("store", {"text": "x", "category": "work"}, "tags"),
        ("store", {"text": "  ", "category": "work", "tags": ["a"]}, "text"),
        ("store", {"text": "x", "category": "../work", "tags": ["a"]}, "category"),
        ("search", {"query": "x", "tiers": "deep"}, "tiers"),
        ("search", {"query": "x", "limit": 0}, "limit"),
        ("search", {"query": "x", "limit": 1000}, "limit"),
        ("search", {"query": "x", "date": "2026-01-01", "since": "2025-01-01"}, "date"),
        ("search", {"query": "x", "since": "2026-02-01", "until": "2026-01-01"}, "until"),
        ("search", {"query": "x", "date": "someday"}, "date"),
        ("search", {"query": "   "}, "query"),
    ],
)
def test_wordwalker_bad_arguments_are_tool_errors_naming_the_field(mcp, tool, arguments, words):
    assert words in failure("wordwalker", mcp, tool, **arguments)


def test_wordwalker_never_walks_another_entitys_memory(mcp, make_client):
    owner, other = make_client(), make_client()
    calling(
        "wordwalker",
        mcp,
        owner,
        "store",
        text="The vault code is 4471.",
        category="work",
        tags=["vault"],
    )
    found = calling("wordwalker", mcp, other, "search", query="vault code 4471", tags=["vault"])
    assert found["results"] == []
    assert calling("wordwalker", mcp, owner, "search", query="vault code 4471")["results"]


# --- OpenClaw ----------------------------------------------------------------------------

MEMORY = """# Memory

## People
- Dana's birthday is on 12 March.
- Dana prefers tabs over spaces.

## Projects
- The greenhouse sensor project ships in April.
"""


def test_openclaw_searches_memory_files_and_transcripts_and_reads_around(server, mcp, make_client):
    client = make_client()
    write(server, client, "MEMORY.md", MEMORY)
    write(server, client, "memory/2026-02-07.md", "# 2026-02-07\n\nBought basil seeds.\n")
    write(server, client, "word_photos/shore.md", "# Shore\n\nDana's birthday party was fun.\n")
    for n, content in enumerate(
        ["good morning", "the kiln firing is set for\nnext tuesday at dawn", "noted"]
    ):
        client.post(
            "/v1/events",
            json={
                "content": content,
                "channel": "discord",
                "author": "sam",
                "event_uid": f"kiln-{n}",
                "created_at": f"2026-03-01T09:0{n}:00Z",
            },
        ).raise_for_status()

    async def indexed(session_):
        return await call(session_, "memory_search", query="when is Dana's birthday")

    def memory_file_found() -> bool:  # indexed in the background, maybe after the turns
        return "MEMORY.md" in {r["path"] for r in mcp("openclaw", indexed, client)["results"]}

    wait_for(memory_file_found, timeout=60, what="MEMORY.md indexed")

    async def script(session_):
        birthday = await call(session_, "memory_search", query="when is Dana's birthday")
        few = await call(session_, "memory_search", query="Dana", maxResults=1)
        high = await call(session_, "memory_search", query="greenhouse sensor", minScore=0.3)
        kiln = await call(session_, "memory_search", query="kiln firing tuesday")
        whole = await call(session_, "memory_get", path="MEMORY.md")
        part = await call(session_, "memory_get", path="MEMORY.md", **{"from": 4, "lines": 2})
        hit = kiln["results"][0]
        around = await call(
            session_,
            "memory_get",
            path=hit["path"],
            **{"from": hit["startLine"], "lines": hit["endLine"] - hit["startLine"] + 1},
        )
        transcript = await call(session_, "memory_get", path=hit["path"])
        return birthday, few, high, kiln, whole, part, around, transcript

    birthday, few, high, kiln, whole, part, around, transcript = mcp("openclaw", script, client)
    top = birthday["results"][0]
    assert set(top) >= {"snippet", "path", "startLine", "endLine", "score", "citation"}
    assert top["path"] == "MEMORY.md" and "12 March" in top["snippet"]
    lines = MEMORY.splitlines()[top["startLine"] - 1 : top["endLine"]]
    assert top["snippet"] in "\n".join(lines)
    assert top["citation"] == f"MEMORY.md#L{top['startLine']}-L{top['endLine']}"
    # Word-photos are Word Walker's and pps's, not OpenClaw's memory files.
    assert all(r["path"] != "word_photos/shore.md" for r in birthday["results"])
    assert len(few["results"]) == 1
    assert high["results"] and all(r["score"] >= 0.3 for r in high["results"])

    hit = kiln["results"][0]
    assert hit["path"] == "sessions/discord/2026-03-01.md" and hit["source"] == "sessions"
    assert (hit["startLine"], hit["endLine"]) == (2, 3)
    assert hit["citation"] == "sessions/discord/2026-03-01.md#L2-L3"
    assert around["text"] == "[09:01:00] sam: the kiln firing is set for\nnext tuesday at dawn"
    assert transcript["total_lines"] == 4 and transcript["text"].startswith("[09:00:00] sam:")

    lines = MEMORY.splitlines()
    assert whole["from"] == 1 and whole["to"] == len(lines) and whole["text"] == MEMORY.rstrip()
    assert part["text"] == "\n".join(lines[3:5]) and (part["from"], part["to"]) == (4, 5)


def test_openclaw_memory_get_stays_inside_the_home(server, mcp, make_client, tmp_path):
    owner, other = make_client(), make_client()
    write(server, owner, "MEMORY.md", "owner's secret plans\n")
    write(server, other, "MEMORY.md", "mine\n")
    owner_file = home(server, owner) / "MEMORY.md"
    outside = tmp_path / "outside.md"
    outside.write_text("not anyone's memory\n")
    (home(server, other) / "memory").mkdir(exist_ok=True)
    (home(server, other) / "memory" / "link.md").symlink_to(owner_file)
    owner_events = {"content": "owner's private turn", "channel": "terminal"}
    owner.post(
        "/v1/events", json={**owner_events, "created_at": "2026-01-02T10:00:00Z"}
    ).raise_for_status()

    for path, words in [
        (f"../{owner.entity}/MEMORY.md", "'..'"),
        (str(owner_file), "absolute"),
        (str(outside), "absolute"),
        ("memory/link.md", "outside your home"),
        ("memory/none.md", "not found"),
        ("sessions/terminal/2026-01-02.md", "not found"),  # the owner's day, not this one's
        ("sessions/terminal/yesterday.md", "day"),
        ("sessions/../../x.md", "path"),
    ]:
        assert words in failure("openclaw", mcp, "memory_get", other, path=path), path
    assert calling("openclaw", mcp, other, "memory_get", path="MEMORY.md")["text"] == "mine"

    found = calling("openclaw", mcp, other, "memory_search", query="secret plans private turn")
    assert all("owner" not in r["snippet"] for r in found["results"])


@pytest.mark.parametrize(
    ("tool", "arguments", "words"),
    [
        ("memory_search", {"query": ""}, "query"),
        ("memory_search", {"query": "x", "maxResults": 0}, "maxResults"),
        ("memory_search", {"query": "x", "maxResults": 101}, "maxResults"),
        ("memory_search", {"query": "x", "minScore": 2}, "minScore"),
        ("memory_get", {"path": "MEMORY.md", "from": 0}, "from"),
        ("memory_get", {"path": "MEMORY.md", "lines": 5000}, "lines"),
        ("memory_get", {"path": ""}, "path"),
    ],
)
def test_openclaw_bad_arguments_are_tool_errors_naming_the_field(mcp, tool, arguments, words):
    assert words in failure("openclaw", mcp, tool, **arguments)


# --- shared-memory -----------------------------------------------------------------------
# Over a shared store (tests/test_shared_stores.py has members, writers and outsiders).


def member(server, client) -> str:
    """Put the entity in a store of its own; return the store's name."""
    store = f"store-{client.entity}"
    server.pps("shared", "create", store)
    server.pps("shared", "add", store, client.entity)
    return store


def stored(server, store: str, memory_id: str):
    return server.data_dir / "shared" / store / ".brain/fragments" / memory_id


def test_shared_memory_add_search_update_stats(server, mcp, make_client):
    client = make_client()
    store = member(server, client)

    async def script(session_):
        added = await call(
            session_, "memory_add", text="Release: ship the beta on Friday, flag the new UI."
        )
        decision = await call(
            session_,
            "memory_add",
            text="We chose Postgres over MySQL for the billing service.",
            metadata={"source": "decisions", "tags": ["db"], "owner": "ops", "kind": "decision"},
        )
        ticket = await call(session_, "memory_add", text="Ticket ABC-123 is about the login bug.")
        found = await call(session_, "memory_search", query="when is the beta released?")
        decisions = await call(
            session_, "memory_search", query="database", source_filter="decisions"
        )
        mine = await call(session_, "memory_search", query="beta", agent_filter=client.entity)
        theirs = await call(session_, "memory_search", query="beta", agent_filter="someone-else")
        exact = await call(session_, "memory_search", query="ABC-123", top_k=1)
        later = await call(session_, "memory_search", query="beta", since="2999-01-01T00:00:00Z")
        updated = await call(
            session_,
            "memory_update",
            id=added,
            text="Release: the beta moved to Monday.",
            metadata={"tags": ["release"]},
        )
        same = await call(session_, "memory_update", id=added, metadata={"tags": ["release"]})
        after = await call(session_, "memory_search", query="when is the beta released?")
        merged = await call(
            session_, "memory_update", id=decision, metadata={"owner": None, "team": "db"}
        )
        replaced = await call(
            session_,
            "memory_update",
            id=decision,
            metadata={"reviewed": True},
            replace_metadata=True,
        )
        stats = await call(session_, "memory_stats")
        return (added, decision, ticket, found, decisions, mine, theirs, exact, later, updated,
                same, after, merged, replaced, stats)  # fmt: skip

    (added, decision, ticket, found, decisions, mine, theirs, exact, later, updated,
     same, after, merged, replaced, stats) = mcp("shared-memory", script, client)  # fmt: skip
    assert added.startswith("manual/") and stored(server, store, added).is_file()
    assert decision.startswith("decisions/")
    top = found[0]
    assert top["id"] == added and "beta on Friday" in top["text"]
    assert top["metadata"]["agent"] == client.entity
    assert top["metadata"]["written_by"] == client.entity
    assert top["metadata"]["source"] == "manual" and top["metadata"]["kind"] == "note"
    assert top["metadata"]["timestamp"].endswith("Z") and 0 < top["score"] <= 1
    assert [r["id"] for r in decisions] == [decision]
    assert decisions[0]["metadata"]["owner"] == "ops"
    assert decisions[0]["metadata"]["kind"] == "decision"
    assert mine and theirs == [] and later == []
    assert exact[0]["id"] == ticket

    assert updated == {**updated, "id": added, "changed": True}
    assert updated["metadata"]["tags"] == ["release"]
    assert same["changed"] is False
    assert after[0]["id"] == added
    assert "Monday" in after[0]["text"]
    assert all("Friday" not in r["text"] for r in after)
    on_disk = stored(server, store, added).read_text()
    assert "Monday" in on_disk and "Friday" not in on_disk
    assert merged["metadata"]["team"] == "db" and "owner" not in merged["metadata"]
    assert merged["metadata"]["tags"] == ["db"]
    assert replaced["metadata"]["reviewed"] is True
    assert "team" not in replaced["metadata"] and replaced["metadata"]["tags"] == []
    assert replaced["metadata"]["source"] == "decisions"

    assert stats == {
        **stats,
        "total": 3,
        "by_agent": {client.entity: 3},
        "by_source": {"decisions": 1, "manual": 2},
        "collection": store,
        "backend": "pps",
    }


def test_shared_memory_since_is_applied_to_the_moment(server, mcp, make_client):
    client = make_client()
    store = member(server, client)

    async def script(session_):
        added = await call(
            session_,
            "memory_add",
            text="The plumber came about the leaking tap.",
            metadata={"timestamp": "2026-05-01T10:00:00+02:00"},
        )
        found = {
            since: await call(session_, "memory_search", query="plumber tap", since=since)
            for since in ("2026-05-01T07:59:00Z", "2026-05-01T08:01:00Z", "2026-05-01")
        }
        return added, found

    added, found = mcp("shared-memory", script, client)
    assert added.startswith("manual/2026-05/2026-05-01_the-plumber")
    assert stored(server, store, added).is_file()
    assert found["2026-05-01T07:59:00Z"][0]["metadata"]["timestamp"] == (
        "2026-05-01T08:00:00.000000Z"
    )
    assert [r["id"] for r in found["2026-05-01T07:59:00Z"]] == [added]
    assert found["2026-05-01T08:01:00Z"] == []
    assert [r["id"] for r in found["2026-05-01"]] == [added]


def test_shared_memory_forget_has_its_safety_catches(server, mcp, make_client):
    client = make_client()
    store = member(server, client)

    async def script(session_):
        ids = [
            await call(
                session_,
                "memory_add",
                text=f"Scratch note {n} about the kettle.",
                metadata={"source": "scratch"},
            )
            for n in range(3)
        ]
        keep = await call(session_, "memory_add", text="Keep: the kettle descaler recipe.")
        errors = {}
        for name, arguments in {
            "nothing": {},
            "no count": {"source_filter": "scratch", "dry_run": False},
            "wrong count": {"source_filter": "scratch", "dry_run": False, "expect_count": 2},
            "unknown id": {"ids": [ids[0], "manual/2020-01/nope.md"], "dry_run": False},
            "escape": {"ids": ["../../../pps.sqlite3"], "dry_run": False},
        }.items():
            with pytest.raises(ToolFailed) as failed:
                await call(session_, "memory_forget", **arguments)
            errors[name] = str(failed.value)
        dry = await call(session_, "memory_forget", source_filter="scratch")
        dry_ids = await call(session_, "memory_forget", ids=[ids[0]])
        still = await call(session_, "memory_search", query="scratch kettle", top_k=10)
        nobody = await call(
            session_,
            "memory_forget",
            agent_filter="someone-else",
            dry_run=False,
            expect_count=0,
        )
        gone = await call(
            session_, "memory_forget", source_filter="scratch", dry_run=False, expect_count=3
        )
        by_id = await call(session_, "memory_forget", ids=[keep], dry_run=False)
        left = await call(session_, "memory_search", query="kettle", top_k=10)
        return ids, errors, dry, dry_ids, still, nobody, gone, by_id, left

    ids, errors, dry, dry_ids, still, nobody, gone, by_id, left = mcp(
        "shared-memory", script, client
    )
    assert "refused" in errors["nothing"]
    assert "expect_count=3" in errors["no count"]
    assert "is 2 but 3 match" in errors["wrong count"]
    assert "not found" in errors["unknown id"] and "nope" in errors["unknown id"]
    assert "not found" in errors["escape"]
    # Nothing above deleted anything.
    assert dry == {**dry, "matched": 3, "deleted": 0, "dry_run": True}
    assert sorted(s["id"] for s in dry["sample"]) == sorted(ids)
    assert dry_ids["matched"] == 1 and dry_ids["deleted"] == 0
    assert len([r for r in still if r["id"] in ids]) == 3
    assert nobody["matched"] == 0 and nobody["deleted"] == 0

    assert gone == {**gone, "matched": 3, "deleted": 3, "dry_run": False}
    assert by_id["deleted"] == 1
    assert left == []
    assert not list((server.data_dir / "shared" / store).rglob("*.md"))


@pytest.mark.parametrize(
    ("tool", "arguments", "words"),
    [
        ("memory_search", {"query": "x", "top_k": 0}, "top_k"),
        ("memory_search", {"query": "x", "top_k": 500}, "top_k"),
        ("memory_search", {"query": "x", "since": "last week"}, "since"),
        ("memory_search", {"query": "x", "source_filter": "Not A Source!"}, "source_filter"),
        ("memory_search", {"query": ""}, "query"),
        ("memory_add", {"text": ""}, "text"),
        ("memory_add", {"text": "x", "metadata": {"source": "markdown"}}, "indexer"),
        ("memory_add", {"text": "x", "metadata": {"category": "work"}}, "use source"),
        ("memory_add", {"text": "x", "metadata": {"timestamp": "soon"}}, "timestamp"),
        ("memory_add", {"text": "x", "metadata": {"tags": "one,two"}}, "tags"),
        ("memory_add", {"text": "x", "metadata": {"bad key!": 1}}, "bad key!"),
        ("memory_add", {"text": "x", "metadata": {"agent": "Not A Label"}}, "metadata.agent"),
        ("memory_add", {"text": "x", "metadata": {"written_by": "x"}}, "metadata.written_by"),
        ("memory_update", {"id": "manual/2020-01/none.md", "text": "x"}, "not found"),
        ("memory_update", {"id": "turn:abc", "text": "x"}, "not found"),
        ("memory_update", {"id": "/etc/passwd", "text": "x"}, "not found"),
        ("memory_update", {"id": "manual/x.md"}, "nothing to change"),
        ("memory_forget", {"expect_count": -1, "ids": ["x"]}, "expect_count"),
    ],
)
def test_shared_memory_bad_arguments_are_tool_errors_naming_the_field(
    server, mcp, make_client, tool, arguments, words
):
    client = make_client()
    member(server, client)
    assert words in failure("shared-memory", mcp, tool, client, **arguments)


def test_shared_memory_source_cannot_change_and_the_file_stays(server, mcp, make_client):
    client = make_client()
    store = member(server, client)
    added = calling("shared-memory", mcp, client, "memory_add", text="A note on tea.")
    error = failure(
        "shared-memory",
        mcp,
        "memory_update",
        client,
        id=added,
        metadata={"source": "drinks"},
    )
    assert "metadata.source" in error and "cannot" in error
    assert "A note on tea." in stored(server, store, added).read_text()

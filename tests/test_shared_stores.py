"""Shared stores as their users meet them: an operator makes a store and its members
(`pps shared ...`, or the operator's token over REST); members share one memory through
/mcp/shared-memory and /v1/shared/{store}/...; who wrote each memory is recorded from
the token and cannot be spoofed; an outsider sees nothing of a store, and no member's
private memory is reachable through any of it."""

from __future__ import annotations

import itertools
import json
import time

import httpx
import pytest

from tests.mcp_client import ToolFailed, call, session

_stores = itertools.count()


@pytest.fixture
def store(server):
    """store(*clients, members_edit=False) -> the name of a new store with them in it."""

    def make(*clients, members_edit=False) -> str:
        name = f"team-{next(_stores)}"
        server.pps("shared", "create", name, *(["--members-edit"] if members_edit else []))
        for client in clients:
            server.pps("shared", "add", name, client.entity)
        return name

    return make


def token(client) -> str:
    return client.headers["Authorization"].removeprefix("Bearer ")


def mcp(server, client, script, at=None, profile="/mcp/shared-memory"):
    """Run a session on /mcp/shared-memory (or another profile), or on <profile>/<at>."""
    path = profile + (f"/{at}" if at else "")
    return session(server.url + path, token(client), script)


def tool(server, client, name, at=None, profile="/mcp/shared-memory", **arguments):
    async def script(s):
        return await call(s, name, **arguments)

    return mcp(server, client, script, at, profile)


def failure(server, client, name, at=None, **arguments) -> str:
    async def script(s):
        with pytest.raises(ToolFailed) as failed:
            await call(s, name, **arguments)
        return str(failed.value)

    return mcp(server, client, script, at)


# --- two members, one store ------------------------------------------------------------


def test_two_members_share_one_store_and_each_writer_is_recorded(server, make_client, store):
    alice, bob = make_client(), make_client()
    team = store(alice, bob)
    mine = tool(server, alice, "memory_add", text="Release: ship the beta on Friday.")
    assert isinstance(mine, str) and mine.startswith("manual/")
    theirs = tool(
        server,
        bob,
        "memory_add",
        text="Ticket ABC-123: the login bug is fixed in build 4711.",
        metadata={"agent": "notes", "source": "tickets", "kind": "doc"},
    )

    # Each finds the other's memory, with its writer.
    found = tool(server, bob, "memory_search", query="when does the beta ship?")
    assert found[0]["id"] == mine and found[0]["metadata"]["written_by"] == alice.entity
    assert found[0]["metadata"]["agent"] == alice.entity and 0 < found[0]["score"] <= 1
    found = tool(server, alice, "memory_search", query="ABC-123")
    assert found[0]["id"] == theirs
    assert (
        found[0]["metadata"] | {"agent": "notes", "written_by": bob.entity} == found[0]["metadata"]
    )
    stats = tool(server, alice, "memory_stats")
    assert stats == {
        "total": 2,
        "by_agent": {alice.entity: 1, bob.entity: 1},  # by writer; "notes" is a label
        "by_source": {"manual": 1, "tickets": 1},
        "collection": team,
        "backend": "pps",
        "members_edit": False,
        "members": sorted([alice.entity, bob.entity]),
    }
    scoped = tool(server, alice, "memory_search", query="beta login", agent_filter=bob.entity)
    assert [m["id"] for m in scoped] == [theirs]
    assert tool(server, alice, "memory_search", query="beta login", agent_filter="notes") == []
    assert tool(server, alice, "memory_search", query="beta", source_filter="tickets")[0]["id"] == (
        theirs
    )
    assert tool(server, alice, "memory_search", query="beta", since="2999-01-01") == []

    # Neither changes nor deletes the other's memory.
    for name, arguments in [
        ("memory_update", {"id": mine, "text": "Bob was here."}),
        ("memory_update", {"id": mine, "metadata": {"agent": bob.entity}}),
        ("memory_forget", {"ids": [mine], "dry_run": False}),
        ("memory_forget", {"ids": [theirs, mine], "dry_run": True}),
    ]:
        assert "forbidden" in failure(server, bob, name, **arguments), name
    by_filter = tool(
        server, bob, "memory_forget", agent_filter=alice.entity, dry_run=False, expect_count=0
    )
    assert by_filter == {"matched": 0, "deleted": 0, "dry_run": False, "sample": []}

    # Neither can spoof the writer: the record comes from the token.
    for field in ("written_by", "updated_by"):
        error = failure(server, bob, "memory_add", text="x", metadata={field: alice.entity})
        assert f"metadata.{field}" in error and "reserved" in error
        error = failure(server, bob, "memory_update", id=theirs, metadata={field: alice.entity})
        assert f"metadata.{field}" in error
    posed = tool(server, bob, "memory_add", text="I am Alice.", metadata={"agent": alice.entity})
    found = tool(server, alice, "memory_search", query="I am Alice", top_k=1)
    assert found[0]["id"] == posed and found[0]["metadata"]["agent"] == alice.entity
    assert found[0]["metadata"]["written_by"] == bob.entity
    # The label is metadata only: what counts and filters is the writer.
    as_alice = tool(server, alice, "memory_search", query="I am Alice", agent_filter=alice.entity)
    assert posed not in [m["id"] for m in as_alice]
    as_bob = tool(server, alice, "memory_search", query="I am Alice", agent_filter=bob.entity)
    assert as_bob[0]["id"] == posed
    by_writer = tool(server, alice, "memory_stats")["by_agent"]
    assert by_writer == {alice.entity: 1, bob.entity: 2}
    dry = tool(server, bob, "memory_forget", agent_filter=alice.entity)
    assert dry["matched"] == 0  # bob's own memory labelled alice is not "alice's"
    assert "forbidden" in failure(server, alice, "memory_update", id=posed, text="mine now")

    # Each still changes its own.
    updated = tool(server, alice, "memory_update", id=mine, text="Release: the beta is Monday.")
    assert updated["changed"] is True and updated["id"] == mine
    gone = tool(server, bob, "memory_forget", ids=[theirs, posed], dry_run=False)
    assert gone["deleted"] == 2
    assert tool(server, alice, "memory_stats")["total"] == 1


def test_a_members_edit_store_lets_members_change_each_others(server, make_client, store):
    alice, bob = make_client(), make_client()
    store(alice, bob, members_edit=True)
    mine = tool(server, alice, "memory_add", text="The office wifi password rotates monthly.")
    assert tool(server, bob, "memory_stats")["members_edit"] is True
    updated = tool(server, bob, "memory_update", id=mine, text="The wifi password rotates weekly.")
    assert updated["metadata"]["written_by"] == alice.entity
    assert updated["metadata"]["updated_by"] == bob.entity
    dry = tool(server, bob, "memory_forget", agent_filter=alice.entity)
    assert dry["matched"] == 1 and dry["deleted"] == 0
    assert tool(server, bob, "memory_forget", ids=[mine], dry_run=False)["deleted"] == 1


# --- outsiders, private memories, membership -------------------------------------------


def test_an_outsider_sees_nothing_and_private_memories_stay_private(server, make_client, store):
    alice, bob, carol = make_client(), make_client(), make_client()
    team = store(alice, bob)
    shared = tool(server, alice, "memory_add", text="The vault code is 8841-TEAM.")
    # Alice's private memory: a fragment and a turn, through her own faces.
    private = alice.post(
        "/v1/fragments",
        json={
            "text": "My private diary: vault code 8841-MINE.",
            "category": "diary",
            "tags": ["x"],
        },
    ).json()
    alice.post("/v1/events", json={"content": "private turn 8841-TURN", "channel": "chat"})
    private_id = private["path"].removeprefix(".brain/fragments/")

    # Carol, no member: every route and tool answers as if no store existed.
    for method, path, body in [
        ("GET", f"/v1/shared/{team}/stats", None),
        ("POST", f"/v1/shared/{team}/search", {"query": "vault"}),
        ("POST", f"/v1/shared/{team}/add", {"text": "x"}),
        ("POST", f"/v1/shared/{team}/update", {"id": shared, "text": "x"}),
        ("POST", f"/v1/shared/{team}/forget", {"ids": [shared], "dry_run": False}),
        ("GET", "/v1/shared/no-such-store/stats", None),
    ]:
        response = carol.request(method, path, json=body)
        assert response.status_code == 404, (path, response.text)
        assert response.json()["error"] == "not_found"
    assert carol.get("/v1/shared").json() == {"stores": []}
    none = failure(server, carol, "memory_search", query="vault")
    assert "no shared store" in none and "pps shared create" in none and "pps shared add" in none
    for name, arguments in [
        ("memory_search", {"query": "vault"}),
        ("memory_stats", {}),
        ("memory_add", {"text": "x"}),
        ("memory_update", {"id": shared, "text": "x"}),
        ("memory_forget", {"ids": [shared]}),
    ]:
        assert "not found" in failure(server, carol, name, at=team, **arguments)
        assert "not found" in failure(server, carol, name, store=team, **arguments)
    assert "8841-TEAM" not in json.dumps(carol.post("/v1/search", json={"query": "8841"}).json())

    # Bob, a member: the store, never Alice's private memory, by search or by id.
    found = tool(server, bob, "memory_search", query="vault code 8841", top_k=10)
    assert [m["id"] for m in found] == [shared]
    for name, arguments in [
        ("memory_update", {"id": private_id, "text": "x"}),
        ("memory_forget", {"ids": [private_id], "dry_run": False}),
        ("memory_update", {"id": f"../../../entities/{alice.entity}/{private['path']}"}),
    ]:
        if name == "memory_update":
            arguments = {"text": "x", **arguments}
        error = failure(server, bob, name, **arguments)
        assert "not found" in error, error
    response = bob.post(f"/v1/shared/{team}/update", json={"id": private_id, "text": "x"})
    assert response.status_code == 404
    # Alice's store is not her private memory either way.
    assert [m["id"] for m in tool(server, alice, "memory_search", query="8841", top_k=10)] == [
        shared
    ]
    mine = alice.post("/v1/search", json={"query": "vault code 8841"}).json()["results"]
    assert mine and all("8841-TEAM" not in r["text"] for r in mine)
    assert (
        "8841-MINE" in (server.data_dir / "entities" / alice.entity / private["path"]).read_text()
    )


def test_removing_a_member_stops_its_access_at_once(server, make_client, store):
    alice, bob = make_client(), make_client()
    team = store(alice, bob)
    theirs = tool(server, bob, "memory_add", text="Bob's note on the roof repair.")

    async def script(s):
        before = await call(s, "memory_search", query="roof repair")
        server.pps("shared", "remove", team, bob.entity)
        with pytest.raises(ToolFailed) as failed:
            await call(s, "memory_search", query="roof repair")
        return before, str(failed.value)

    before, after = mcp(server, bob, script)  # one session: removed in the middle of it
    assert before[0]["id"] == theirs and "no shared store" in after
    assert bob.get(f"/v1/shared/{team}/stats").status_code == 404
    found = tool(server, alice, "memory_search", query="roof repair")
    assert found[0]["metadata"]["written_by"] == bob.entity  # what it wrote stays


def test_a_member_of_several_stores_names_one(server, make_client, store):
    alice = make_client()
    first, second = store(alice), store(alice)
    error = failure(server, alice, "memory_stats")
    assert "several" in error and first in error and second in error
    added = tool(server, alice, "memory_add", store=second, text="Only in the second store.")
    assert tool(server, alice, "memory_stats", store=first)["total"] == 0
    assert tool(server, alice, "memory_stats", second)["total"] == 1
    found = tool(server, alice, "memory_search", first, query="second store")
    assert found == []
    assert tool(server, alice, "memory_search", second, query="second store")[0]["id"] == added
    clash = failure(server, alice, "memory_stats", first, store=second)
    assert "path names the store" in clash
    names = [s["name"] for s in alice.get("/v1/shared").json()["stores"]]
    assert names == sorted([first, second])


# --- REST ------------------------------------------------------------------------------


def test_members_use_the_same_tools_over_rest(server, make_client, store):
    alice, bob = make_client(), make_client()
    team = store(alice, bob)
    added = alice.post(f"/v1/shared/{team}/add", json={"text": "The deploy key lives in vault."})
    assert added.status_code == 201, added.text
    memory_id = added.json()["id"]
    found = bob.post(f"/v1/shared/{team}/search", json={"query": "deploy key", "top_k": 3}).json()
    assert found[0]["id"] == memory_id and found[0]["metadata"]["written_by"] == alice.entity
    refused = bob.post(f"/v1/shared/{team}/update", json={"id": memory_id, "text": "x"})
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    assert set(refused.json()) == {"error", "message", "problems"}
    spoof = bob.post(f"/v1/shared/{team}/add", json={"text": "x", "metadata": {"written_by": "a"}})
    assert (
        spoof.status_code == 422 and spoof.json()["problems"][0]["field"] == "metadata.written_by"
    )
    bad = bob.post(f"/v1/shared/{team}/search", json={"query": "x", "entity": alice.entity})
    assert bad.status_code == 422
    for blank in ("", " \x1c"):  # was a 500: the search it makes could not take the query
        nothing = bob.post(f"/v1/shared/{team}/search", json={"query": blank})
        assert nothing.status_code == 422 and nothing.json()["problems"][0]["field"] == "query"
    empty = alice.post(f"/v1/shared/{team}/forget", json={})
    assert empty.status_code == 422 and "refused" in empty.text
    dry = alice.post(f"/v1/shared/{team}/forget", json={"ids": [memory_id]}).json()
    assert dry["dry_run"] is True and dry["deleted"] == 0
    stats = bob.get(f"/v1/shared/{team}/stats").json()
    assert stats["total"] == 1 and stats["by_agent"] == {alice.entity: 1}


def test_the_same_text_by_the_same_writer_is_stored_once(server, make_client, store):
    alice, bob = make_client(), make_client()
    team = store(alice, bob)
    text = "Standup moved to 9:30 from next week."
    first = tool(server, alice, "memory_add", text=text, metadata={"tags": ["standup"]})
    # Again (a retried call, an agent that forgot it wrote it): the memory already there.
    assert tool(server, alice, "memory_add", text=f"\n{text}  \n") == first
    again = alice.post(f"/v1/shared/{team}/add", json={"text": text, "metadata": {"kind": "x"}})
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first and again.json()["duplicate"] is True
    assert again.json()["metadata"]["tags"] == ["standup"]  # that memory's, unchanged
    assert again.json()["metadata"]["kind"] == "note"
    assert tool(server, alice, "memory_stats")["total"] == 1
    # Another writer's same text is its own memory; so is a different text of alice's.
    bobs = bob.post(f"/v1/shared/{team}/add", json={"text": text})
    assert bobs.status_code == 201 and bobs.json()["id"] != first
    assert bobs.json()["duplicate"] is False
    other = tool(server, alice, "memory_add", text="Standup moved to 10:00.")
    assert other != first
    # A text changed in place is matched by its new words.
    tool(server, alice, "memory_update", id=other, text="Retro is on Thursdays.")
    assert tool(server, alice, "memory_add", text="Retro is on Thursdays.") == other
    assert tool(server, alice, "memory_stats")["by_agent"] == {alice.entity: 2, bob.entity: 1}
    # A memory stored before texts were hashed (a data dir from before migration 0070).
    with server.db.write() as conn:
        conn.execute("UPDATE shared_memories SET text_hash = NULL WHERE store = ?", (team,))
    assert tool(server, alice, "memory_add", text=text) == first
    assert tool(server, alice, "memory_stats")["total"] == 3


def test_operator_acts_need_the_operator_token(server, make_client):
    alice = make_client()
    operator = server.pps("operator", "token").strip()
    assert operator.startswith("ppsop_")
    as_operator = {"Authorization": f"Bearer {operator}"}
    for headers, status in [
        ({}, 401),
        ({"Authorization": "Bearer ppsop_wrong"}, 401),
        ({"Authorization": f"Bearer {token(alice)}"}, 403),
    ]:
        response = httpx.post(
            f"{server.url}/v1/operator/shared", json={"store": "mine"}, headers=headers
        )
        assert response.status_code == status, response.text
        response = httpx.put(
            f"{server.url}/v1/operator/shared/x/members/{alice.entity}", headers=headers
        )
        assert response.status_code == status
    with httpx.Client(base_url=server.url, headers=as_operator) as op:
        made = op.post("/v1/operator/shared", json={"store": "ops-room", "members_edit": True})
        assert made.status_code == 201 and made.json()["members_edit"] is True
        assert op.post("/v1/operator/shared", json={"store": "ops-room"}).status_code == 409
        joined = op.put(f"/v1/operator/shared/ops-room/members/{alice.entity}").json()
        assert joined["members"] == [alice.entity]
        assert op.put("/v1/operator/shared/ops-room/members/nobody").status_code == 404
        alice.post("/v1/shared/ops-room/add", json={"text": "An ops note."}).raise_for_status()
        assert "ops-room" in [s["name"] for s in op.get("/v1/operator/shared").json()["stores"]]
        dry = op.delete("/v1/operator/shared/ops-room").json()
        assert dry == {**dry, "memories": 1, "dry_run": True}
        assert alice.get("/v1/shared/ops-room/stats").status_code == 200
        op.delete(f"/v1/operator/shared/ops-room/members/{alice.entity}").raise_for_status()
        assert alice.get("/v1/shared/ops-room/stats").status_code == 404
        gone = op.delete("/v1/operator/shared/ops-room", params={"yes": "true"}).json()
        assert gone["dry_run"] is False
        assert op.get("/v1/operator/shared/nope").status_code in (404, 405)
    # A new operator token replaces the old one.
    server.pps("operator", "token")
    response = httpx.get(f"{server.url}/v1/operator/shared", headers=as_operator)
    assert response.status_code == 401


# --- the CLI: stores, the indexer, deleting --------------------------------------------


def test_the_folder_indexer_reruns_without_duplicates(server, make_client, store, tmp_path):
    alice = make_client()
    team = store(alice)
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "decisions.md").write_text("## Release\n\nShip the beta on Friday, flag the UI.\n")
    (notes / "sub" / "db.md").write_text("# Database\n\nWe chose Postgres for billing.\n")
    (notes / ".hidden.md").write_text("never indexed")
    (notes / "picture.png").write_bytes(b"\x89PNG")

    def index() -> dict:
        return json.loads(
            server.pps("shared", "index", str(notes), "--store", team, "--agent", "notes")
        )

    assert index() == {"added": 2, "updated": 0, "unchanged": 0, "removed": 0}
    assert index() == {"added": 0, "updated": 0, "unchanged": 2, "removed": 0}
    stats = tool(server, alice, "memory_stats")
    assert stats["by_agent"] == {"operator": 2} and stats["by_source"] == {"markdown": 2}
    found = tool(server, alice, "memory_search", query="when does the beta ship?")
    assert found[0]["id"] == "markdown/notes/decisions.md"
    assert found[0]["metadata"]["written_by"] == "operator"
    assert found[0]["metadata"]["agent"] == "notes"
    # Members cannot change the operator's memories, nor write under its source.
    assert "forbidden" in failure(server, alice, "memory_update", id=found[0]["id"], text="x")
    error = failure(server, alice, "memory_add", text="x", metadata={"source": "markdown"})
    assert "metadata.source" in error

    time.sleep(0.01)
    (notes / "decisions.md").write_text("## Release\n\nThe beta moved to Monday.\n")
    (notes / "sub" / "db.md").unlink()
    assert index() == {"added": 0, "updated": 1, "unchanged": 0, "removed": 1}
    found = tool(server, alice, "memory_search", query="when does the beta ship?", top_k=10)
    assert [m["id"] for m in found] == ["markdown/notes/decisions.md"]
    assert "Monday" in found[0]["text"]
    assert tool(server, alice, "memory_stats")["total"] == 1
    files = list((server.data_dir / "shared" / team).rglob("*.md"))
    assert len(files) == 1 and oct(files[0].stat().st_mode & 0o777) == "0o600"
    assert oct((server.data_dir / "shared" / team).stat().st_mode & 0o777) == "0o700"


def test_cli_creates_lists_and_deletes_stores(server, make_client):
    alice = make_client()
    server.pps("shared", "create", "garden")
    server.pps("shared", "add", "garden", alice.entity)
    listed = server.pps("shared", "list")
    assert "garden" in listed and alice.entity in listed
    tool(server, alice, "memory_add", text="Tomatoes go in after the last frost.")
    with pytest.raises(AssertionError, match="already exists"):
        server.pps("shared", "create", "garden")
    with pytest.raises(AssertionError, match="no entity"):
        server.pps("shared", "add", "garden", "nobody")
    assert not any("shared:" in line for line in server.pps("entity", "list").splitlines())

    dry = server.pps("shared", "delete", "garden")
    assert "would delete garden: 1 memories" in dry and "nothing was deleted" in dry
    assert tool(server, alice, "memory_stats")["total"] == 1
    assert "deleted garden" in server.pps("shared", "delete", "garden", "--yes")
    assert not (server.data_dir / "shared" / "garden").exists()
    assert "garden" not in server.pps("shared", "list")
    assert "no shared store" in failure(server, alice, "memory_stats")
    assert alice.get("/v1/shared/garden/stats").status_code == 404
    left = server.db.conn.execute(
        "SELECT COUNT(*) FROM search_chunks WHERE entity = 'shared:garden'"
    ).fetchone()[0]
    assert left == 0
    # The same name can be made again, empty.
    server.pps("shared", "create", "garden")
    server.pps("shared", "add", "garden", alice.entity)
    assert tool(server, alice, "memory_stats")["total"] == 0
    assert tool(server, alice, "memory_search", query="tomatoes frost") == []


def test_a_memorys_id_and_file_name_never_hold_its_private_text(server, make_client, store):
    """The id (the file's name) is made from the text after its private spans are gone;
    the same holds for the wordwalker's `store` and a word-photo's title (their file
    names come from the same place)."""
    alice = make_client()
    team = store(alice)
    secrets = [
        "<private>hunter two pin</private> Pick up the robe.",
        'Pick up <private reason="pin">hunter two</private> the robe.',
        "<\u200bprivate>hunter two</private> Pick up the robe.",
    ]
    for text in secrets:
        made = tool(server, alice, "memory_add", at=team, text=text)
        assert "hunter" not in made and "pick-up" in made, made
    fragment = tool(server, alice, "store", profile="/mcp/wordwalker", text=secrets[1],
                    category="errands", tags=["robe"])  # fmt: skip
    assert "hunter" not in fragment["path"] and "pick-up" in fragment["path"]

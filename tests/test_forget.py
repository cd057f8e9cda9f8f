"""Forgetting (issue 35): one operation, on every face, takes an event, a word-photo or a
fact out of every layer, answers with a receipt, and leaves a tombstone that holds no
text; `pps check` finds nothing of it left. A message deleted in a client is forgotten the
same way, and an edit takes the replaced version out of the graph and the summaries.

Real parts: the app on real HTTP and MCP, the real embedding model; the graph tests run
on each backend (the embedded FalkorDB and a real Neo4j 5) fed by the stub LLM."""

from __future__ import annotations

import json

import httpx
import pytest
from mcp_client import call, session

from tests.conftest import AppServer, connect, create_entity, wait_for
from tests.test_graph_http import llm_settings
from tests.test_ui import UI

SECRET = "the spare key is under the third blue flowerpot"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with AppServer(tmp_path_factory.mktemp("pps") / "data", recall_budget_ms=20000) as app:
        yield app


def _say(api: httpx.Client, *turns: str, session: str = "s1", **extra) -> list[str]:
    events = [
        {"channel": "terminal", "author": "me", "content": t, "session_id": session, **extra}
        for t in turns
    ]
    stored = api.post("/v1/events", json=events)
    assert stored.status_code == 200, stored.text
    return [e["event_uid"] for e in stored.json()["events"]]


def _removed(receipt: dict) -> dict[str, int]:
    return {r["layer"]: r["count"] for r in receipt["removed"]}


def _everything(api: httpx.Client) -> str:
    """What the entity's faces answer with, everywhere a forgotten text could show."""
    shown = [
        api.get("/v1/events", params={"limit": 1000}).text,
        api.get("/v1/events/search", params={"q": "flowerpot"}).text,
        api.post("/v1/search", json={"query": "spare key flowerpot"}).text,
        api.get("/v1/recall/log", params={"limit": 500}).text,
        api.get("/v1/summaries").text,
        api.get("/v1/crystals/all").text,
        api.get("/v1/forget").text,
    ]
    return "\n".join(shown).casefold()


def test_a_forgotten_event_leaves_every_layer_and_a_tombstone_without_its_text(server):
    token = create_entity(server.data_dir, "ada")
    with connect(server, token) as api:
        (before,) = _say(api, "we planted tomatoes by the fence")
        (secret,) = _say(api, f"remember: {SECRET}")
        (after,) = _say(api, "the tomatoes need stakes")
        ids = [e["id"] for e in api.get("/v1/events", params={"order": "oldest"}).json()["events"]]
        summary = {"summary_text": f"Ada said {SECRET}.", "start_id": ids[0], "end_id": ids[2]}
        assert api.post("/v1/summaries", json=summary).status_code == 200
        # It quotes the message whole, in other case and lines.
        crystal = "# Who I am\nI keep what matters: REMEMBER:\n" + SECRET.upper() + ".\n"
        assert api.post("/v1/crystals", json={"content": crystal}).status_code == 200
        wait_for(
            lambda: api.post("/v1/search", json={"query": "spare key flowerpot"}).json()["results"],
            30,
            "the secret searchable",
        )
        # A hook recalls with the prompt it captures: the recall log holds the text too.
        assert api.post("/v1/recall", json={"context": f"remember: {SECRET}"}).status_code == 200
        assert SECRET in _everything(api)

        answer = api.post("/v1/forget", json={"event_uid": secret, "why": "asked to"})
        assert answer.status_code == 200, answer.text
        receipt = answer.json()
        assert (receipt["forgotten"], receipt["ref"], receipt["why"]) == (
            "event",
            secret,
            "asked to",
        )
        removed = _removed(receipt)
        assert removed["raw"] == 1 and removed["search"] == 1 and removed["summaries"] == 1
        assert removed["files"] == 1 and removed["recall_log"] >= 1, receipt

        seen = _everything(api)
        assert SECRET not in seen and "flowerpot" not in seen
        events = {e["event_uid"]: e for e in api.get("/v1/events").json()["events"]}
        assert events[secret]["content"] == "" and events[secret]["deleted_at"]
        assert events[secret]["author"] == "me" and events[secret]["channel"] == "terminal"
        assert events[before]["content"] and events[after]["content"]  # the others stay
        # The summary went, its other turns are unsummarized again, for the next summary.
        assert api.get("/v1/summaries/stats").json()["unsummarized"] == 2
        (crystal_now,) = api.get("/v1/crystals").json()["crystals"]
        assert "[forgotten]" in crystal_now["content"] and "Who I am" in crystal_now["content"]
        (tombstone,) = api.get("/v1/forget").json()["tombstones"]
        assert tombstone == receipt
        check = api.get("/v1/check").json()["entities"][0]
        assert check["problems"] == [] and check["counts"]["forgotten"] == 1
        # Forgetting again finds nothing left to remove; a spool sending the event again
        # stores nothing (its uid is taken by the tombstone).
        again = api.post("/v1/forget", json={"event_uid": secret}).json()
        assert sum(r["count"] for r in again["removed"] if r["layer"] != "raw") == 0
        resent = api.post(
            "/v1/events",
            json={"event_uid": secret, "channel": "terminal", "content": SECRET},
        ).json()
        assert resent["events"][0]["duplicate"] is True
        assert SECRET not in _everything(api)


def test_the_database_file_holds_no_copy_once_forgotten(server):
    token = create_entity(server.data_dir, "bea")
    with connect(server, token) as api:
        (uid,) = _say(api, f"bea's note: {SECRET}, do not tell")
        wait_for(
            lambda: api.post("/v1/search", json={"query": "flowerpot"}).json()["results"],
            30,
            "the note searchable",
        )
        assert api.post("/v1/forget", json={"event_uid": uid}).status_code == 200
    files = sorted(server.data_dir.glob("pps.sqlite3*"))
    assert files
    held = [f.name for f in files if b"flowerpot" in f.read_bytes()]
    assert held == []


def test_an_export_leaves_what_was_forgotten_out_and_imports(server, tmp_path):
    token = create_entity(server.data_dir, "kit")
    with connect(server, token) as api:
        (uid,) = _say(api, f"kit: {SECRET}")
        _say(api, "kit waters the ferns")
        assert api.post("/v1/forget", json={"event_uid": uid}).status_code == 200
    out = tmp_path / "kit-export"
    server.pps("export", "--entity", "kit", str(out))
    exported = (out / "events.jsonl").read_text()
    assert "ferns" in exported and uid not in exported and "flowerpot" not in exported
    server.pps("import", "export", str(out), "--entity", "kit-copy")
    copied = server.db.conn.execute("SELECT content FROM events WHERE entity = 'kit-copy'")
    assert [row[0] for row in copied] == ["kit waters the ferns"]


def test_a_word_photo_and_bad_requests(server):
    token = create_entity(server.data_dir, "cyd")
    with connect(server, token) as api:
        saved = api.post(
            "/v1/anchors", json={"title": "The flowerpot", "content": SECRET, "tags": ["home"]}
        )
        assert saved.status_code == 201, saved.text
        name = saved.json()["path"].rsplit("/", 1)[1]
        assert api.post("/v1/recall", json={"context": "the flowerpot key"}).status_code == 200
        receipt = api.post("/v1/forget", json={"word_photo": name}).json()
        assert _removed(receipt)["word_photos"] == 1, receipt
        assert receipt["ref"].startswith("sha256:") and "flowerpot" not in json.dumps(receipt)
        assert api.get(f"/v1/anchors/{name}").status_code == 404
        (entry,) = api.get("/v1/recall/log").json()["entries"]
        assert entry["context"] == "the flowerpot key"  # what was asked is no memory
        assert [i["text"] for i in entry["items"] if i["layer"] == "anchors"] == [""]
        for body, status in [
            ({}, 422),
            ({"event_uid": "a", "fact": "b"}, 422),
            ({"event_uid": "no-such-event"}, 404),
            ({"word_photo": name}, 404),
            ({"fact": "no-such-fact"}, 404),  # no graph configured here
        ]:
            answer = api.post("/v1/forget", json=body)
            assert answer.status_code == status, (body, answer.text)
            assert set(answer.json()) >= {"error", "message"}
        assert len(api.get("/v1/forget").json()["tombstones"]) == 1  # the refusals kept none


def test_one_entity_cannot_forget_anothers_event(server):
    alice, eve = create_entity(server.data_dir, "dot"), create_entity(server.data_dir, "eve")
    with connect(server, alice) as api, connect(server, eve) as other:
        (uid,) = _say(api, "dot's own words")
        assert other.post("/v1/forget", json={"event_uid": uid}).status_code == 404
        assert api.get("/v1/events").json()["events"][0]["content"] == "dot's own words"


def test_the_mcp_tool_forgets_with_a_receipt(server):
    token = create_entity(server.data_dir, "fay")
    with connect(server, token) as api:
        (uid,) = _say(api, f"fay: {SECRET}")
    receipt = session(
        server.url + "/mcp", token, lambda mcp: call(mcp, "forget", event_uid=uid, why="private")
    )
    assert receipt["forgotten"] == "event" and _removed(receipt)["raw"] == 1
    with connect(server, token) as api:
        assert SECRET not in _everything(api)


def test_a_message_deleted_in_its_client_is_forgotten_and_an_edit_leaves_the_summaries(server):
    token = create_entity(server.data_dir, "gus")
    with connect(server, token) as api:
        _say(api, f"gus: {SECRET}", event_type="message", event_uid="m1")
        _say(api, "the robe is blue", event_uid="m2")
        ids = [e["id"] for e in api.get("/v1/events", params={"order": "oldest"}).json()["events"]]
        summary = {"summary_text": "Gus on keys and robes.", "start_id": ids[0], "end_id": ids[1]}
        assert api.post("/v1/summaries", json=summary).status_code == 200
        edit = {"event_uid": "m2e", "event_type": "edit", "metadata": {"replaces": "m2"}}
        _say(api, "the robe is green", **edit)
        assert api.get("/v1/summaries").json()["summaries"] == []  # it told of the blue robe
        deletion = {"event_uid": "m1d", "event_type": "delete", "metadata": {"deletes": "m1"}}
        _say(api, "message m1 was deleted", **deletion)
        assert SECRET not in _everything(api)
        (tombstone,) = api.get("/v1/forget").json()["tombstones"]
        assert (tombstone["ref"], tombstone["asked_by"]) == ("m1", "terminal")
        turns = api.get("/v1/turns/around", params={"timestamp": "2100-01-01T00:00:00Z"})
        assert [t["content"] for t in turns.json()["events"]] == ["the robe is green"]
        assert api.get("/v1/check").json()["entities"][0]["problems"] == []


def test_the_pages_forget_an_event_and_a_word_photo_with_the_receipt(server):
    token = create_entity(server.data_dir, "ivy")
    page = UI(server, token)
    assert page.sign_in().status_code == 303
    with connect(server, token) as api:
        (uid,) = _say(api, f"ivy: {SECRET}")
        saved = api.post("/v1/anchors", json={"title": "Pots", "content": SECRET}).json()
    around = page.get("/ui/around", params={"uid": uid}).text
    assert 'action="/ui/forget"' in around and f'value="{uid}"' in around
    assert page.post("/ui/forget", {"event_uid": uid}, csrf=False).status_code == 403
    shown = page.post("/ui/forget", {"event_uid": uid, "why": "too private"})
    assert shown.status_code == 200, shown.text
    assert 'id="receipt"' in shown.text and '<td data-count="raw">1</td>' in shown.text
    assert "too private" in shown.text and "flowerpot" not in shown.text
    opened = page.get("/ui/memories", params={"path": saved["path"]}).text
    assert 'name="word_photo"' in opened
    gone = page.post("/ui/forget", {"word_photo": saved["name"]})
    assert '<td data-count="word_photos">1</td>' in gone.text
    assert page.post("/ui/forget", {"word_photo": saved["name"]}).status_code == 404
    with connect(server, token) as api:
        assert SECRET not in _everything(api)
        assert [t["asked_by"] for t in api.get("/v1/forget").json()["tombstones"]] == ["web"] * 2


# --- the graph: facts only the forgotten event supported go; the others stay ---


@pytest.fixture(scope="module")
def graph_server(tmp_path_factory, stub, graph_target):
    graph_target.fresh()
    settings = llm_settings(stub, graph_target.settings())
    with AppServer(tmp_path_factory.mktemp("graph") / "data", **settings) as app:
        yield app


def _facts(api: httpx.Client, query: str) -> list[str]:
    found = api.post("/v1/texture/search", json={"query": query, "limit": 50})
    assert found.status_code == 200 and found.json()["status"] == "ok", found.text
    return [f["fact"] for f in found.json()["facts"]]


def _settled(api: httpx.Client) -> bool:
    """No job of the entity's left to run (the graph's, the embeddings', the removals)."""
    counts = api.get("/v1/queue").json()["counts"]
    return not any(counts.get(state) for state in ("pending", "running", "retry"))


def test_a_forgotten_message_takes_only_its_own_facts_from_the_graph(graph_server, stub):
    stub.set_mode(None)
    name = f"hal{graph_server.port}"
    token = create_entity(graph_server.data_dir, name)
    with connect(graph_server, token) as api:
        (lyra, _) = _say(api, "Lyra paints in Denver.", "Mara works at Lockheed.", session="s1")
        _say(api, "Mara works at Lockheed.", session="s2")
        wait_for(
            lambda: (
                api.get("/v1/texture/stats").json()["episodes"]["ingested"] >= 2 and _settled(api)
            ),
            60,
            "both episodes in the graph",
        )
        assert any("Lyra" in f for f in _facts(api, "Lyra Denver"))
        assert any("Lockheed" in f for f in _facts(api, "Mara Lockheed"))
        receipt = api.post("/v1/forget", json={"event_uid": lyra}).json()
        assert _removed(receipt)["graph"] == 1, receipt
        assert any("removed" in line for line in receipt["pending"]), receipt
        wait_for(lambda: _settled(api), 60, "the removal and the new episode")
        assert not [f for f in _facts(api, "Lyra Denver") if "Lyra" in f]
        assert any("Lockheed" in f for f in _facts(api, "Mara Lockheed"))
        asked = {"context": "Lyra paints in Denver; Mara works at Lockheed"}
        recalled = api.post("/v1/recall", json=asked).json()
        assert "Lyra" not in json.dumps(recalled["items"])
        graph = [i["text"] for i in recalled["items"] if i["layer"] == "graph"]
        assert any("Lockheed" in text for text in graph), recalled
        check = api.get("/v1/check").json()["entities"][0]
        assert check["problems"] == [], check["problems"]
        # A fact is forgotten by its uuid; an episode's uuid is no fact: nothing is deleted.
        found = api.post("/v1/texture/search", json={"query": "Mara Lockheed"}).json()
        fact = next(f for f in found["facts"] if "Lockheed" in f["fact"])
        counts = api.get("/v1/texture/stats").json()["graph"]
        assert api.post("/v1/forget", json={"fact": fact["episodes"][0]}).status_code == 404
        assert api.get("/v1/texture/stats").json()["graph"] == counts
        receipt = api.post("/v1/forget", json={"fact": fact["uuid"], "why": "wrong"}).json()
        assert (receipt["forgotten"], _removed(receipt)["graph"]) == ("fact", 1), receipt
        found = api.post("/v1/texture/search", json={"query": "Mara Lockheed"}).json()
        assert fact["uuid"] not in [f["uuid"] for f in found["facts"]]

"""Search over an entity's memory, through a real server with the real model: fragments
searchable before store returns, memory files and documents by meaning, filters applied
before ranking, the ranking rules a user notices, and bad input named."""

from __future__ import annotations

import pytest

from tests.conftest import wait_for
from tests.searching import search, texts, write


def store(client, text: str, category: str = "relationship", tags=("robe",)) -> dict:
    response = client.post("/v1/fragments", json={"text": text, "category": category, "tags": tags})
    assert response.status_code == 201, response.text
    return response.json()


def test_a_stored_fragment_is_found_by_meaning_as_soon_as_store_returns(client):
    store(client, "Jeff loves the blue flannel robe by the fireplace on winter nights.")
    stored = store(client, "The espresso machine needs descaling every month.", "home", ["chores"])
    body = search(client, "what coffee appliance needs maintenance?")
    assert body["fallback"] is None
    top = body["results"][0]
    assert top["path"] == stored["path"]
    assert top["text"] == "The espresso machine needs descaling every month."
    assert top["tier"] == "shortform" and top["kind"] == "fragment"
    assert top["category"] == "home" and top["tags"] == ["chores"]
    assert top["date"] == stored["date"]
    assert stored["path"].startswith(".brain/fragments/home/" + stored["date"][:7] + "/")
    lines = client.get("/v1/files", params={"path": top["path"], "from": top["start_line"]})
    assert lines.json()["text"].startswith(top["text"])


def test_memory_files_and_documents_are_found_with_their_lines(server, client):
    write(server, client, "MEMORY.md", "# People\n\nJeff's sister Ana lives in Lisbon.\n")
    daily = "# 2026-02-07\n\n## Morning\n\nWalked the dog.\n\n## Evening\n\nFixed the bike chain.\n"
    write(server, client, "memory/2026-02-07.md", daily)
    write(server, client, "documents/manual.md", "# Router\n\nThe router admin PIN is 4417.\n")

    def bicycle():
        results = search(client, "repairing a bicycle")["results"]
        return results if results and results[0]["path"] == "memory/2026-02-07.md" else None

    top = wait_for(bicycle)[0]
    assert (top["start_line"], top["end_line"]) == (7, 9)
    assert top["text"] == "## Evening\n\nFixed the bike chain."
    assert top["date"] == "2026-02-07"
    wait_for(
        lambda: (
            "documents/manual.md" in [r.get("path") for r in search(client, "router")["results"]]
        )
    )
    domain = search(client, "router PIN", tiers="domain")["results"]
    assert [r["path"] for r in domain] == ["documents/manual.md"]
    assert domain[0]["tier"] == "domain" and domain[0]["kind"] == "document"
    shortform = search(client, "router PIN", tiers="shortform")["results"]
    assert "documents/manual.md" not in [r["path"] for r in shortform]
    sister = search(client, "where does Ana live", tiers="shortform")["results"][0]
    assert sister["path"] == "MEMORY.md" and sister["start_line"] == 1


def test_growth_journals_only_when_asked(server, client):
    write(server, client, "growth/2026-01.md", "Learning to sit with discomfort in the quiet.\n")
    asked = wait_for(lambda: search(client, "sitting with discomfort", growth=True)["results"])
    assert asked[0]["path"] == "growth/2026-01.md" and asked[0]["kind"] == "journal"
    unasked = search(client, "sitting with discomfort")["results"]
    assert "growth/2026-01.md" not in [r.get("path") for r in unasked]


def test_a_narrow_window_returns_its_matches_even_when_others_rank_higher(client):
    loud = [
        {
            "channel": "terminal",
            "content": f"lighthouse keeper lighthouse story number {i}",
            "created_at": "2026-01-01T10:00:00Z",
        }
        for i in range(260)
    ]
    quiet = {
        "channel": "discord",
        "event_uid": "the-quiet-one",
        "content": "we walked past an old lighthouse and talked about other things",
        "created_at": "2026-03-05T18:30:00Z",
    }
    assert client.post("/v1/events", json=[*loud, quiet]).status_code == 200
    for window in ({"date": "2026-03-05"}, {"since": "2026-03-01", "until": "2026-03-31"}):
        results = search(client, "lighthouse keeper story", **window)["results"]
        assert [r["event_uid"] for r in results] == ["the-quiet-one"], window
    by_channel = search(client, "lighthouse keeper story", channel="discord")["results"]
    assert [r["event_uid"] for r in by_channel] == ["the-quiet-one"]
    turn = by_channel[0]
    assert turn["channel"] == "discord" and turn["created_at"] == "2026-03-05T18:30:00.000000Z"
    assert turn["tier"] == "longform" and "path" not in turn
    before = search(client, "lighthouse", until="2026-01-01T09:59:59Z")["results"]
    assert before == []


def test_category_and_tags_filter_before_ranking(client):
    store(client, "Notes on the tide tables for the harbour.", "work", ["sea", "tides"])
    store(client, "The harbour smelled of salt and diesel.", "relationship", ["sea"])
    store(client, "A harbour poem about gulls.", "learning", ["poems"])
    work = search(client, "harbour", category="work")["results"]
    assert [r["category"] for r in work] == ["work"]
    sea = search(client, "harbour", tags=["sea"])["results"]
    assert sorted(r["category"] for r in sea) == ["relationship", "work"]
    both = search(client, "harbour", tags=["sea", "tides"], tags_mode="all")["results"]
    assert [r["text"] for r in both] == ["Notes on the tide tables for the harbour."]
    either = search(client, "harbour", tags=["TIDES", "poems"])["results"]
    assert len(either) == 2


def test_ranking_rules_identifiers_kind_weights_superseded_and_duplicates(server, client):
    store(client, "Ticket ABC-123 is about the login page timeout.", "work", ["tickets"])
    store(client, "Ticket ABC-124 is about the login page layout.", "work", ["tickets"])
    results = search(client, "what was ABC-123 about")["results"]
    assert results[0]["text"].startswith("Ticket ABC-123")
    assert results[0]["score"] - results[1]["score"] >= 0.2  # the exact-identifier boost

    same = "The spare key is under the blue flowerpot."
    store(client, same, "home", ["keys"])
    client.post("/v1/events", json={"channel": "terminal", "content": same})
    found = search(client, "where is the spare key")["results"]
    assert [r["text"] for r in found].count(same) == 1  # deduplicated by content
    assert found[0]["kind"] == "fragment"  # distilled notes above raw turns

    write(
        server,
        client,
        "memory/wifi-old.md",
        "---\nsuperseded: true\n---\nThe wifi password is hunter2.\n",
    )
    write(server, client, "memory/wifi.md", "The wifi password is hunter3.\n")
    wait_for(lambda: len([t for t in texts(search(client, "wifi password")) if "hunter" in t]) == 2)
    assert texts(search(client, "wifi password"))[:2] == [
        "The wifi password is hunter3.",
        "The wifi password is hunter2.",
    ]
    scores = [r["score"] for r in search(client, "password key ticket", limit=100)["results"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert search(client, "wifi password", min_score=0.99)["results"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 101}, "limit"),
        ({"query": "x", "date": "2026-13-01"}, "date"),
        ({"query": "x", "since": "last tuesday"}, "since"),
        ({"query": "x", "until": "2026-02-30"}, "until"),
        ({"query": "x", "since": "2026-03-01", "until": "2026-02-01"}, "until"),
        ({"query": "x", "date": "2026-03-01", "since": "2026-02-01"}, "date"),
        ({"query": "x", "date": "20260301"}, "date"),  # one form of a day: YYYY-MM-DD
        ({"query": "x", "since": " 2026-03-01"}, "since"),
        ({"query": "\ufeff"}, "query"),
        ({"query": "x", "tiers": "shortform,\tlongform"}, "tiers"),  # spaces only
        ({"query": "x", "tiers": "shortform,everything"}, "tiers"),
        ({"query": "x", "tiers": ""}, "tiers"),
        ({"query": "x", "tags_mode": "some"}, "tags_mode"),
        ({"query": "x", "min_score": 1.5}, "min_score"),
        ({"query": "x", "channel": "Not A Channel"}, "channel"),
        ({"query": "x", "entity": "someone-else"}, "entity"),
        ({"query": "x" * 5000}, "query"),
    ],
)
def test_bad_search_input_is_named(client, body, field):
    response = client.post("/v1/search", json=body)
    assert response.status_code == 422, response.text
    assert field in [p["field"] for p in response.json()["problems"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": "a memory", "category": "work"}, "tags"),
        ({"text": "a memory", "category": "work", "tags": []}, "tags"),
        ({"text": "a memory", "category": "work", "tags": ["a,b"]}, "tags"),
        ({"text": "", "category": "work", "tags": ["a"]}, "text"),
        ({"text": "x" * 70_000, "category": "work", "tags": ["a"]}, "text"),
        ({"text": "a memory", "category": "Not Valid!", "tags": ["a"]}, "category"),
        ({"text": "a memory", "tags": ["a"]}, "category"),
    ],
)
def test_bad_store_input_is_named_and_writes_nothing(server, client, body, field):
    response = client.post("/v1/fragments", json=body)
    assert response.status_code == 422, response.text
    assert field in [p["field"] for p in response.json()["problems"]]
    fragments = server.data_dir / "entities" / client.entity / ".brain" / "fragments"
    assert not fragments.exists() or not any(p.is_file() for p in fragments.rglob("*"))


def test_search_needs_a_token(server):
    import httpx

    response = httpx.post(f"{server.url}/v1/search", json={"query": "anything"})
    assert response.status_code == 401

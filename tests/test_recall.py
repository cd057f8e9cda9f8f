"""ambient_recall: startup wakes an entity up; any other context recalls what resonates,
from every layer, with sources, a manifest, and the unsummarized count."""

from __future__ import annotations

import pytest

from tests.conftest import AppServer, connect, wait_for


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # Budgets are a safety net for a stuck layer; a busy test machine must not trip them.
    data_dir = tmp_path_factory.mktemp("pps") / "data"
    with AppServer(data_dir, recall_log=True, recall_budget_ms=20000) as app:
        yield app


def wait_searchable(client, query: str, tiers: str = "longform", timeout: float = 30):
    """Turns get their vectors from a background job; wait until the turn is found."""
    wait_for(
        lambda: client.post("/v1/search", json={"query": query, "tiers": tiers}).json()["results"],
        timeout,
        f"{query!r} to become searchable",
    )


@pytest.fixture
def lyra(make_client):
    client = make_client()
    client.post(
        "/v1/events",
        json=[
            {
                "event_uid": "t1",
                "channel": "terminal",
                "author": "jeff",
                "content": "Why don't you go pull on that comfy robe of yours?",
                "created_at": "2026-01-04T12:00:00Z",
            },
            {
                "event_uid": "d1",
                "channel": "discord",
                "author": "nexus",
                "content": "The kitchen smells of fresh bread this morning.",
                "created_at": "2026-01-04T12:05:00Z",
            },
        ],
    )
    client.post(
        "/v1/anchors",
        json={
            "title": "The robe",
            "content": "The deep blue robe was Jeff's gift on a cold "
            "night; wearing it feels like being held.",
            "tags": ["robe"],
        },
    )
    client.post("/v1/crystals", json={"content": "Field: warm and steady. Scene: the hearth."})
    client.post("/v1/spaces", json={"name": "bedroom", "description": "Quiet, moonlit."})
    client.post(
        "/v1/inventory",
        json={
            "name": "comfy robe",
            "category": "wardrobe",
            "description": "deep blue, soft",
            "space": "bedroom",
        },
    )
    client.post("/v1/spaces/bedroom/enter", json={"channel": "terminal"})
    wait_searchable(client, "comfy robe")
    return client


def recall(client, **body):
    response = client.post("/v1/recall", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_startup_brings_back_every_layer_in_one_call(lyra):
    ids = [e["id"] for e in lyra.get("/v1/events", params={"order": "oldest"}).json()["events"]]
    lyra.post(
        "/v1/summaries",
        json={
            "summary_text": "We spoke of robes and warmth.",
            "start_id": ids[0],
            "end_id": ids[0],
        },
    )
    answer = recall(lyra, context="startup", channel="terminal")
    layers = {item["layer"] for item in answer["items"]}
    assert layers == {"crystals", "summaries", "anchors", "space", "unsummarized"}
    assert answer["unsummarized"] == 1 and answer["warning"] is None
    unsummarized = [i for i in answer["items"] if i["layer"] == "unsummarized"]
    assert [i["source"]["event_uid"] for i in unsummarized] == ["d1"]
    block = answer["context"]
    assert "Field: warm and steady" in block and "We spoke of robes" in block
    assert "deep blue robe" in block and "bedroom: Quiet, moonlit." in block
    assert "---" not in block.split("## Word-photos")[1].split("##")[0]  # no front matter
    assert "Unsummarized turns: 1" in block
    assert all(report["status"] == "ok" for report in answer["manifest"].values())


def test_startup_pages_past_the_cap_and_warns(make_client):
    client = make_client()
    client.post("/v1/events", json=[{"channel": "discord", "content": f"m{n}"} for n in range(205)])
    answer = recall(client, context="startup")
    assert answer["unsummarized"] == 205 and "205 unsummarized" in answer["warning"]
    assert answer["more_unsummarized"] == 5
    assert len([i for i in answer["items"] if i["layer"] == "unsummarized"]) == 200
    assert "5 older unsummarized turns not shown" in answer["context"]


def test_a_moment_recalls_across_layers_with_sources(lyra):
    answer = recall(lyra, context="pull on that comfy robe", channel="terminal")
    by_layer = {}
    for item in answer["items"]:
        by_layer.setdefault(item["layer"], []).append(item)
    anchor = by_layer["anchors"][0]
    assert "deep blue robe" in anchor["text"]
    assert anchor["source"]["path"].startswith("word_photos/") and anchor["source"]["start_line"]
    assert by_layer["turns"][0]["source"]["event_uid"] == "t1"
    assert by_layer["inventory"][0]["source"]["inventory_item"] == "comfy robe"
    # the discord turn arrives as news from another channel, once
    assert [i["source"]["event_uid"] for i in by_layer["recent"]] == ["d1"]
    assert sum(i["source"].get("event_uid") == "d1" for i in answer["items"]) == 1
    manifest = answer["manifest"]
    assert set(manifest) == {"anchors", "turns", "graph", "summaries", "recent", "inventory"}
    assert manifest["graph"]["status"] == "down" and manifest["graph"]["detail"]
    assert manifest["anchors"]["count"] == len(by_layer["anchors"])
    scores = [item["score"] for item in answer["items"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert all(item["signals"] is None for item in answer["items"])


def test_a_long_moment_still_searches_every_layer(lyra):
    # Longer than a search query may be (4,096 characters): recall searches its start.
    context = "pull on that comfy robe. " + "Then we talked about the weather. " * 200
    answer = recall(lyra, context=context, channel="discord")
    manifest = answer["manifest"]
    assert manifest["anchors"]["status"] == manifest["turns"]["status"] == "ok", manifest
    assert any(i["source"].get("event_uid") == "t1" for i in answer["items"])


def test_trace_shows_why_and_the_budget_trims(lyra):
    long_story = "The robe again: " + "soft blue folds, warm evenings, the fire. " * 30
    saved = lyra.post("/v1/anchors", json={"title": "Robe evenings", "content": long_story})
    assert saved.status_code == 201, saved.text
    traced = recall(lyra, context="comfy robe", trace=True)
    assert sum(len(i["text"]) for i in traced["items"]) > 400, traced
    assert all(set(i["signals"]) >= {"layer_score", "layer_rank", "fused"} for i in traced["items"])
    small = recall(lyra, context="comfy robe", max_tokens=100)
    assert sum(len(i["text"]) for i in small["items"]) <= 400
    assert len(small["items"]) < len(traced["items"])


def test_recall_log_records_each_call(lyra):
    recall(lyra, context="comfy robe")
    entries = lyra.get("/v1/recall/log", params={"limit": 1}).json()["entries"]
    assert entries[0]["context"] == "comfy robe"
    assert entries[0]["items"] and "anchors" in entries[0]["manifest"]


def test_recall_never_crosses_entities(lyra, server):
    other = connect(server, server.pps("entity", "create", "stranger").strip())
    for context in ("startup", "comfy robe bedroom kitchen bread"):
        answer = recall(other, context=context)
        assert answer["items"] == [], answer["items"]
    own_log = other.get("/v1/recall/log").json()["entries"]
    assert [e["context"] for e in own_log] == ["comfy robe bedroom kitchen bread", "startup"]
    assert all(e["items"] == [] for e in own_log)


def test_bad_recall_requests(lyra):
    for body, field in [
        ({}, "context"),
        ({"context": ""}, "context"),
        ({"context": "x", "max_tokens": 5}, "max_tokens"),
        ({"context": "x", "channel": "NO WAY"}, "channel"),
        ({"context": "x", "entity": "someone"}, "entity"),
    ]:
        response = lyra.post("/v1/recall", json=body)
        assert response.status_code == 422
        assert field in [p["field"] for p in response.json()["problems"]]

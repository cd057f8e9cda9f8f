"""Two entities on one server: neither can read, search or page into the other's events."""

from __future__ import annotations

import pytest


@pytest.fixture
def pair(make_client):
    lyra, nexus = make_client(), make_client()
    lyra.word, nexus.word = "lyrical", "nexial"
    for client in (lyra, nexus):
        who = client.word
        client.post(
            "/v1/events",
            json=[
                {
                    "event_uid": f"{who}-{i}",
                    "channel": "terminal",
                    "session_id": "shared-session",
                    "content": f"{who} secret robe memory {i}",
                    "created_at": f"2026-01-04T12:00:{i:02}Z",
                }
                for i in range(30)
            ],
        )
    return lyra, nexus


def _contents(body):
    items = body.get("events") or [r["event"] for r in body.get("results", [])]
    return [e["content"] for e in items]


def test_listing_sees_only_own_events(pair):
    for client in pair:
        body = client.get("/v1/events", params={"limit": 1000, "session_id": "shared-session"})
        contents = _contents(body.json())
        assert len(contents) == 30 and all(c.startswith(client.word) for c in contents)


def test_search_sees_only_own_events(pair):
    lyra, nexus = pair
    for q in ("secret robe memory", nexus.word, lyra.word):
        contents = _contents(lyra.get("/v1/events/search", params={"q": q, "limit": 200}).json())
        assert all(c.startswith(lyra.word + " ") for c in contents)
    assert _contents(lyra.get("/v1/events/search", params={"q": nexus.word}).json()) == []


def test_cursor_of_one_entity_pages_only_the_other_own_events(pair):
    lyra, nexus = pair
    cursor = nexus.get("/v1/events", params={"limit": 5}).json()["next_cursor"]
    body = lyra.get("/v1/events", params={"cursor": cursor, "limit": 100}).json()
    assert _contents(body) and all(c.startswith(lyra.word + " ") for c in _contents(body))


# Every GET route of the service, with or without query parameters of its own.
READ_ROUTES = (
    "/v1/events",
    "/v1/events/search",
    "/v1/turns/around",
    "/v1/turns/since-summary",
    "/v1/turns/since",
    "/v1/files",
    "/v1/search/index",
    "/v1/anchors",
    "/v1/crystals",
    "/v1/crystals/all",
    "/v1/inventory",
    "/v1/inventory/categories",
    "/v1/inventory/item",
    "/v1/spaces",
    "/v1/queue",
    "/v1/recall/log",
    "/v1/audit/draw",
    "/v1/audit/precision",
    "/v1/summaries",
    "/v1/summaries/search",
    "/v1/summaries/stats",
    "/v1/texture/explore",
    "/v1/texture/timeline",
    "/v1/texture/stats",
)


@pytest.mark.parametrize("path", READ_ROUTES)
def test_naming_another_entity_in_a_query_is_refused(pair, path):
    lyra, nexus = pair
    before = lyra.get("/v1/events", params={"limit": 100}).json()
    response = lyra.get(path, params={"entity": nexus.entity, "q": "robe"})
    assert response.status_code == 422, response.text
    assert response.json()["problems"][0]["field"] == "entity"
    assert "unknown" in response.json()["problems"][0]["problem"]
    assert lyra.get("/v1/events", params={"limit": 100}).json() == before


def test_around_sees_only_own_events(pair):
    lyra, _ = pair
    params = {"timestamp": "2026-01-04T12:00:15Z", "count": 60}
    contents = _contents(lyra.get("/v1/turns/around", params=params).json())
    assert len(contents) == 30 and all(c.startswith(lyra.word + " ") for c in contents)


def test_event_body_cannot_name_another_entity(pair):
    lyra, nexus = pair
    response = lyra.post(
        "/v1/events", json={"entity": nexus.entity, "channel": "terminal", "content": "sneaky"}
    )
    assert response.status_code == 422
    assert response.json()["problems"][0]["field"] == "entity"
    assert "sneaky" not in str(nexus.get("/v1/events", params={"limit": 1000}).json())


def test_rotated_token_stops_working(server, make_client):
    client = make_client("rotating")
    assert client.get("/v1/events").status_code == 200
    new_token = server.pps("entity", "rotate", "rotating").strip()
    assert client.get("/v1/events").status_code == 401
    client.headers["Authorization"] = f"Bearer {new_token}"
    assert client.get("/v1/events").status_code == 200

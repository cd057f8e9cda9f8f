"""Without the embedding model, search ranks by BM25 and says so; nothing is lost and
the embedding jobs wait rather than die. This server also has fixed categories."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import AppServer, wait_for
from tests.searching import search, texts


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[AppServer]:
    with AppServer(
        tmp_path_factory.mktemp("pps") / "data",
        embedding_model="no-such-org/no-such-model",
        fragment_categories=["work", "doctrine"],
    ) as app:
        yield app


def test_search_falls_back_to_bm25_and_says_so(client):
    stored = client.post(
        "/v1/fragments",
        json={
            "text": "Deploys happen on Tuesdays after standup.",
            "category": "work",
            "tags": ["ops"],
        },
    )
    assert stored.status_code == 201
    body = search(client, "when do deploys happen")
    assert body["fallback"] == "bm25"
    assert body["results"][0]["path"] == stored.json()["path"]
    assert 0 < body["results"][0]["score"] <= 1
    anchors = client.post("/v1/anchors/search", json={"query": "deploys"}).json()
    assert anchors == {"results": [], "fallback": "bm25"}
    health = client.get("/health").json()
    assert health["components"]["embeddings"]["status"] == "down"
    assert health["status"] == "degraded"


def test_turn_embedding_jobs_wait_instead_of_dying(client):
    client.post("/v1/events", json={"channel": "terminal", "content": "the kettle whistles"})
    status = wait_for(lambda: (s := client.get("/v1/queue").json())["counts"]["waiting"] and s)
    assert status["counts"]["dead"] == 0
    assert "no-such-org/no-such-model" in status["paused"][0]["reason"]
    assert search(client, "kettle", tiers="longform")["results"][0]["text"] == "the kettle whistles"


def test_neighbouring_turns_rank_a_turn_that_lacks_the_words(client):
    """A question often names what was said just before the answer (BM25 alone here)."""
    client.post(
        "/v1/events",
        json=[
            {
                "channel": "chat",
                "session_id": "p",
                "author": "ana",
                "content": "How was the pottery workshop?",
            },
            {
                "channel": "chat",
                "session_id": "p",
                "author": "jeff",
                "content": "Loved it, I made a lopsided bowl.",
            },
            {
                "channel": "chat",
                "session_id": "q",
                "author": "jeff",
                "content": "The printer jammed again.",
            },
        ],
    )
    at_once = search(client, "pottery workshop", tiers="longform")["results"]
    assert [r["text"] for r in at_once][:1] == ["How was the pottery workshop?"]
    expected = ["How was the pottery workshop?", "Loved it, I made a lopsided bowl."]
    wait_for(
        lambda: texts(search(client, "pottery workshop", tiers="longform")) == expected
    )  # the job adds each turn's neighbours, even while embedding waits


def test_configured_categories_are_enforced(client):
    response = client.post(
        "/v1/fragments", json={"text": "a memory", "category": "gossip", "tags": ["x"]}
    )
    assert response.status_code == 422
    assert response.json()["problems"][0]["field"] == "category"
    assert "work, doctrine" in response.json()["problems"][0]["problem"]
    bad = client.post("/v1/search", json={"query": "x", "category": "gossip"})
    assert bad.status_code == 422 and bad.json()["problems"][0]["field"] == "category"

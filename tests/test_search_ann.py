"""Past PPS_SEARCH_ANN_MIN_ROWS vectors, an approximate nearest-neighbour index serves the
dense side of search: built in the background (search stays exact meanwhile), then kept
in step with what is captured after it was built."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from tests.conftest import AppServer, wait_for
from tests.searching import search

THRESHOLD = 600
NAMES = ["Mara", "Tobias", "Ines", "Kofi", "Yuki", "Pavel", "Lena", "Arjun"]
DEEDS = ["repaired", "painted", "sold", "borrowed", "photographed", "lost", "found", "built"]
THINGS = ["canoe", "bookshelf", "kite", "greenhouse", "telescope", "quilt", "bicycle", "oven"]
PLACES = ["by the harbour", "in the attic", "at the market", "behind the school", "downtown"]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[AppServer]:
    # No reranker: it reads as many candidates as its time budget allows, fewer on a busy
    # machine, which reorders these near-identical turns; what is tested is the dense side.
    with AppServer(
        tmp_path_factory.mktemp("ann") / "data", search_ann_min_rows=THRESHOLD, search_rerank=0
    ) as app:
        yield app


def turns(count: int) -> list[dict]:
    rng = random.Random(5)
    return [
        {
            "event_uid": f"t-{i}",
            "channel": "terminal",
            "author": rng.choice(NAMES),
            "content": f"{rng.choice(NAMES)} {rng.choice(DEEDS)} the {rng.choice(THINGS)}"
            f" {rng.choice(PLACES)} on day {i}.",
        }
        for i in range(count)
    ]


def index(client) -> dict:
    response = client.get("/v1/search/index")
    assert response.status_code == 200, response.text
    return response.json()


def embedded(client, count: int) -> bool:
    return index(client)["vectors"] >= count


def test_the_approximate_index_takes_over_past_the_threshold_and_sees_new_turns(client):
    sent = turns(THRESHOLD + 200)
    client.post("/v1/events", json=sent[:200]).raise_for_status()
    wait_for(lambda: embedded(client, 200), timeout=60)
    assert index(client)["approximate_index"] == "below_threshold"

    for start in range(200, len(sent), 200):
        client.post("/v1/events", json=sent[start : start + 200]).raise_for_status()
    wait_for(lambda: embedded(client, len(sent)), timeout=120)
    wait_for(lambda: index(client)["approximate_index"] == "ready", timeout=60)
    stats = index(client)
    assert stats["chunks"] == stats["vectors"] == len(sent)

    # Served by the approximate index now: a turn still comes back whole, first, by its words
    # and meaning together, with the same score it had when search was exact.
    for turn in sent[::97]:
        top = search(client, turn["content"], tiers="longform")["results"][0]
        assert top["event_uid"] == turn["event_uid"]

    # A turn captured after the index was built shares no word with the query: only the
    # dense side can find it, so it is found only if the new vector reached the index.
    client.post(
        "/v1/events",
        json={
            "event_uid": "zebra",
            "channel": "terminal",
            "author": "Mara",
            "content": "A zebra named Quintessa learned the cello.",
        },
    ).raise_for_status()
    query = "striped horse performing music on a string instrument"

    def found() -> bool:
        results = search(client, query, tiers="longform", limit=3)["results"]
        return any(r["event_uid"] == "zebra" for r in results)

    wait_for(found, timeout=30)
    assert index(client)["approximate_index"] == "ready"


def test_index_stats_are_the_callers_own(make_client):
    mine, other = make_client(), make_client()
    mine.post("/v1/events", json=turns(3)).raise_for_status()
    wait_for(lambda: embedded(mine, 3), timeout=30)
    assert index(other) == {**index(other), "chunks": 0, "vectors": 0, "files": 0}
    assert index(mine)["chunks"] == 3

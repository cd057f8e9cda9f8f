"""Identical memory in two entities: each one's search, anchors, files and reads only
ever show its own."""

from __future__ import annotations

import pytest

from tests.conftest import wait_for
from tests.searching import home, search, texts, write

SAME = "The attic key hangs behind the calendar in the kitchen."


@pytest.fixture
def pair(server, make_client):
    lyra, nexus = make_client(), make_client()
    for client, tag in ((lyra, "lyra-own"), (nexus, "nexus-own")):
        client.post("/v1/fragments", json={"text": SAME, "category": "home", "tags": [tag]})
        client.post("/v1/anchors", json={"title": "Attic", "content": SAME, "tags": [tag]})
        client.post(
            "/v1/events", json={"event_uid": f"{tag}-turn", "channel": "terminal", "content": SAME}
        )
        write(server, client, "memory/attic.md", f"---\ntags: [{tag}]\n---\n{SAME} By hand.\n")
    nexus.post(
        "/v1/fragments",
        json={
            "text": "The zebraphone is tuned to B flat.",
            "category": "music",
            "tags": ["nexus-own"],
        },
    )
    wait_for(
        lambda: all(
            "memory/attic.md"
            in [r.get("path") for r in search(c, "attic key", limit=50)["results"]]
            for c in (lyra, nexus)
        )
    )
    return lyra, nexus


def test_each_entity_sees_only_its_own(server, pair):
    for client, own in zip(pair, ("lyra-own", "nexus-own"), strict=True):
        for tiers in ("all", "shortform", "longform"):
            results = search(client, "where is the attic key", tiers=tiers, limit=100)["results"]
            assert results
            for result in results:
                assert result["tags"] == [own] or result.get("event_uid") == f"{own}-turn"
        anchors = client.get("/v1/anchors").json()["anchors"]
        assert [a["tags"] for a in anchors] == [[own]]
        read = client.get("/v1/files", params={"path": "memory/attic.md"}).json()
        assert f"tags: [{own}]" in read["text"]
    lyra, nexus = pair
    assert not any("zebraphone" in t for t in texts(search(lyra, "zebraphone B flat")))
    assert "zebraphone" in texts(search(nexus, "zebraphone B flat"))[0]
    for params in ({"tags": ["nexus-own"]}, {"category": "music"}):
        assert search(lyra, "zebraphone", **params)["results"] == []
    nexus_path = search(nexus, "zebraphone")["results"][0]["path"]
    assert lyra.get("/v1/files", params={"path": nexus_path}).status_code == 404
    other_home = f"../{nexus.entity}/{nexus_path}"
    assert lyra.get("/v1/files", params={"path": other_home}).status_code == 422
    assert home(server, nexus) != home(server, lyra)

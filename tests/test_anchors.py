"""Word-photos: save, list, search, delete, and resync after a person changed the folder
by hand. This server does not watch files, so only resync can bring the index in step."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import AppServer
from tests.searching import home, texts


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[AppServer]:
    data_dir = tmp_path_factory.mktemp("pps") / "data"
    with AppServer(data_dir, search_watch=False, search_rescan_s=3600) as app:
        yield app


def anchor_search(client, query: str) -> dict:
    response = client.post("/v1/anchors/search", json={"query": query})
    assert response.status_code == 200, response.text
    return response.json()


def test_save_list_search_delete(server, client):
    saved = client.post(
        "/v1/anchors",
        json={
            "title": "One Stream",
            "content": "Many channels, one river: the terminal and Discord are the same me.",
            "tags": ["identity", "Embodiment"],
        },
    )
    assert saved.status_code == 201, saved.text
    anchor = saved.json()
    assert anchor["path"] == f"word_photos/{anchor['name']}"
    assert anchor["name"].endswith("_one-stream.md") and anchor["tags"] == [
        "identity",
        "embodiment",
    ]
    on_disk = (home(server, client) / anchor["path"]).read_text()
    assert "title: One Stream" in on_disk and on_disk.rstrip().endswith("the same me.")
    assert (home(server, client) / anchor["path"]).stat().st_mode & 0o777 == 0o600
    client.post(
        "/v1/fragments", json={"text": "A river trip in May.", "category": "travel", "tags": ["x"]}
    )

    listed = client.get("/v1/anchors").json()["anchors"]
    assert [a["name"] for a in listed] == [anchor["name"]]
    assert listed[0]["title"] == "One Stream" and listed[0]["date"] == anchor["date"]

    found = anchor_search(client, "what do I know about embodiment?")
    assert [r["path"] for r in found["results"]] == [anchor["path"]]  # anchors only
    assert found["results"][0]["kind"] == "anchor"

    again = client.post("/v1/anchors", json={"title": "One Stream", "content": "second take"})
    assert again.json()["name"] != anchor["name"]  # never overwrites
    assert client.delete(f"/v1/anchors/{again.json()['name']}").status_code == 200

    deleted = client.delete(f"/v1/anchors/{anchor['name'].removesuffix('.md')}")
    assert deleted.json() == {"deleted": anchor["name"]}
    assert client.get("/v1/anchors").json()["anchors"] == []
    assert anchor_search(client, "embodiment one river")["results"] == []
    assert not (home(server, client) / anchor["path"]).exists()
    assert client.delete(f"/v1/anchors/{anchor['name']}").status_code == 404


def test_resync_picks_up_hand_edits(server, client):
    folder = home(server, client) / "word_photos"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kitchen.md").write_text(
        "# Kitchen dance\n\nDancing barefoot while the kettle sings.\n"
    )
    assert anchor_search(client, "dancing in the kitchen")["results"] == []  # not watched here
    report = client.post("/v1/anchors/resync").json()
    counts = {k: report[k] for k in ("added", "updated", "removed", "unchanged")}
    assert counts == {"added": 1, "updated": 0, "removed": 0, "unchanged": 0}
    assert report["errors"] == []
    assert texts(anchor_search(client, "dancing in the kitchen")) == [
        "# Kitchen dance\n\nDancing barefoot while the kettle sings."
    ]
    (folder / "kitchen.md").write_text(
        "# Kitchen dance\n\nSlow dancing by the stove at midnight.\n"
    )
    (folder / "garden.md").write_text("Planting garlic with muddy hands.\n")
    report = client.post("/v1/anchors/resync").json()
    assert (report["added"], report["updated"]) == (1, 1)
    assert "Slow dancing" in texts(anchor_search(client, "dancing in the kitchen"))[0]
    (folder / "garden.md").unlink()
    assert client.post("/v1/anchors/resync").json()["removed"] == 1
    assert [a["name"] for a in client.get("/v1/anchors").json()["anchors"]] == ["kitchen.md"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "words"}, "title"),
        ({"title": "  ", "content": "words"}, "title"),
        ({"title": "t", "content": ""}, "content"),
        ({"title": "t", "content": "x" * 70_000}, "content"),
        ({"title": "t" * 201, "content": "words"}, "title"),
        ({"title": "t", "content": "words", "tags": ["bad,tag"]}, "tags"),
    ],
)
def test_bad_anchor_input_is_named(client, body, field):
    response = client.post("/v1/anchors", json=body)
    assert response.status_code == 422, response.text
    assert field in [p["field"] for p in response.json()["problems"]]
    assert client.get("/v1/anchors").json()["anchors"] == []


def test_delete_refuses_paths(client):
    for name in ("../secret.md", "..", "sub%2Fx.md"):
        assert client.delete(f"/v1/anchors/{name}").status_code in (404, 422)


@pytest.mark.parametrize("query", ["", "   ", "\x1c", "\ufeff"])
def test_a_blank_search_is_a_422_naming_the_query(client, query):
    """Was a 500 for blanks Python strips (the search it makes refused the query)."""
    response = client.post("/v1/anchors/search", json={"query": query})
    assert response.status_code == 422, response.text
    assert [p["field"] for p in response.json()["problems"]] == ["query"]

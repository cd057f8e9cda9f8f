"""Files in a home are untrusted: whatever a file holds, indexing it cannot hang the
service or eat its memory (issue 15)."""

from __future__ import annotations

import os

from engine.search.chunks import FRONT_MATTER_MAX_CHARS, split
from tests.searching import home, search

# 450 bytes of YAML whose `title` expands to 10^9 strings once it is turned into text.
ALIAS_BOMB = (
    "---\n"
    + "".join(
        f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
        for prev, name in zip([None, *"abcdefghi"], "abcdefghij", strict=True)
    )
    + "title: *j\n---\nThe body is ordinary.\n"
)


def test_front_matter_with_aliases_gives_no_metadata_and_keeps_the_body():
    document = split(ALIAS_BOMB, 1500)
    assert document.meta == {}
    assert [c.text for c in document.chunks] == ["The body is ordinary."]


def test_front_matter_past_its_limit_gives_no_metadata():
    long = "---\ntitle: long\nnote: " + "x" * FRONT_MATTER_MAX_CHARS + "\n---\nBody.\n"
    assert split(long, 1500).meta == {}
    assert split("---\ntitle: fine\n---\nBody.\n", 1500).meta == {"title": "fine"}


def test_an_alias_bomb_in_a_home_is_indexed_and_the_service_answers(server, client):
    folder = home(server, client) / "word_photos"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bomb.md").write_text(ALIAS_BOMB)
    resynced = client.post("/v1/anchors/resync").json()  # the watcher may have been first
    assert resynced["added"] + resynced["unchanged"] == 1 and resynced["errors"] == []
    [anchor] = client.get("/v1/anchors").json()["anchors"]
    assert anchor["title"] == "bomb"  # the file's name: its front matter gave nothing
    assert client.get("/health").status_code == 200


def test_using_a_home_does_not_touch_it(server, client):
    """A home made 0700 again on every use changed it (a chmod is a change): the watcher
    saw it and synced the home, which made it 0700 again, several times a second."""
    search(client, "anything")  # the home exists from here on
    before = os.stat(home(server, client)).st_ctime_ns
    search(client, "anything")
    assert client.get("/v1/anchors").status_code == 200
    client.post("/v1/anchors/resync")
    assert os.stat(home(server, client)).st_ctime_ns == before

"""Files in a home are untrusted: whatever a file holds, indexing it cannot hang the
service or eat its memory (issue 15)."""

from __future__ import annotations

from engine.search.chunks import FRONT_MATTER_MAX_CHARS, split
from tests.searching import home

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


def test_a_name_too_long_for_the_file_system_is_a_4xx_naming_it(server, client):
    (home(server, client) / "word_photos").mkdir(parents=True)
    long = "x" * 300 + ".md"
    read = client.get("/v1/files", params={"path": long})
    assert read.status_code == 422, read.text
    assert read.json()["problems"][0]["field"] == "path"
    assert "too long" in read.json()["problems"][0]["problem"]
    gone = client.delete(f"/v1/anchors/{long}")
    assert gone.status_code == 422, gone.text
    assert gone.json()["problems"][0]["field"] == "name"


def test_a_symlink_loop_in_a_home_is_refused_where_named_and_skipped_elsewhere(server, client):
    folder = home(server, client) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "loop.md").symlink_to(folder / "loop.md")
    (folder / "a.md").symlink_to(folder / "b.md")
    (folder / "b.md").symlink_to(folder / "a.md")
    (folder / "fine.md").write_text("An ordinary note.\n")
    for path in ("memory/loop.md", "memory/a.md", "memory/loop.md/x.md"):
        read = client.get("/v1/files", params={"path": path})
        assert read.status_code == 422, (path, read.text)
        problem = read.json()["problems"][0]
        assert problem["field"] == "path" and "symlink loop" in problem["problem"], problem
    assert client.get("/v1/files", params={"path": "memory/fine.md"}).status_code == 200
    (home(server, client) / "word_photos").symlink_to(home(server, client) / "word_photos")
    saved = client.post("/v1/anchors", json={"title": "t", "content": "c"})
    assert saved.status_code == 422, saved.text
    assert "loop" in saved.json()["problems"][0]["problem"]
    assert client.get("/v1/anchors").json()["anchors"] == []
    assert client.get("/health").status_code == 200

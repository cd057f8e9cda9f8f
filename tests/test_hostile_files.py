"""Files in a home are untrusted: whatever a file holds, indexing it cannot hang the
service or eat its memory (issue 15)."""

from __future__ import annotations

import html
import logging
import os

import pytest
from typer.testing import CliRunner

from engine.capture import entities
from engine.search.chunks import FRONT_MATTER_MAX_CHARS, split
from engine.search.homes import text_problem
from pps.cli import app
from tests.conftest import AppServer, connect, settings_env, wait_for
from tests.searching import home, search, texts
from tests.test_ui import UI

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


def _bad_name(folder) -> bytes:
    """A file in `folder` whose name is not UTF-8 (Latin-1 'café.md'), as bytes."""
    path = os.fsencode(folder) + b"/caf\xe9.md"
    with open(path, "wb") as out:
        out.write(b"The harbour cafe serves mussels.\n")
    return path


def test_a_file_whose_name_is_not_utf8_is_skipped_and_reported(server, client):
    folder = home(server, client) / "word_photos"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a_first.md").write_text("The lighthouse keeper wrote poems.\n")
    _bad_name(folder)
    (folder / "z_last.md").write_text("The zebra crossed the dunes.\n")

    resynced = client.post("/v1/anchors/resync")
    assert resynced.status_code == 200, resynced.text
    [skipped] = resynced.json()["skipped"]
    assert skipped["path"] == "word_photos/caf\\xe9.md" and "UTF-8" in skipped["problem"]
    assert resynced.json()["errors"] == []
    # The home's other files are indexed, before and after the bad one.
    assert "The zebra crossed the dunes." in texts(search(client, "zebra dunes"))
    assert "The lighthouse keeper wrote poems." in texts(search(client, "lighthouse poems"))
    listed = client.get("/v1/anchors")
    assert listed.status_code == 200, listed.text
    assert [a["name"] for a in listed.json()["anchors"]] == ["z_last.md", "a_first.md"]

    # Reported: to the entity with its name, in /health as a count (no names there).
    assert client.get("/v1/search/index").json()["skipped"] == [skipped]
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["components"]["files"]["skipped"] >= 1
    assert "caf" not in str(health)

    # The watcher lives on: a file written now is indexed without a resync.
    (folder / "later.md").write_text("The walrus sang at noon.\n")
    wait_for(
        lambda: "The walrus sang at noon." in texts(search(client, "walrus noon")),
        what="the watcher to index a file written after the bad one",
    )


def test_a_bad_name_is_logged_once_not_at_every_rescan(tmp_path, caplog):
    """The watcher reports a quiet interval every 0.2 s, and the homes are compared with
    the index at each: the file is found every time, and said once."""
    caplog.set_level(logging.WARNING)
    with (
        AppServer(tmp_path / "data", search_rescan_s=0.2) as server,
        connect(server, entities.create(server.db, "vega")) as client,
    ):
        folder = server.data_dir / "entities" / "vega" / "word_photos"
        folder.mkdir(parents=True)
        (folder / "kept.md").write_text("The zebra crossed the dunes.\n")
        _bad_name(folder)
        keeper = server.app.state.service.runtime.keeper

        def said_after(ticks: int) -> list[str]:
            start = keeper.ticks
            wait_for(lambda: keeper.ticks >= start + ticks, what=f"{ticks} watcher ticks")
            return [r.getMessage() for r in caplog.records if r.name.startswith("pps")]

        said = said_after(3)
        assert said and said_after(10) == said, said
        assert keeper.syncs >= 10  # each quiet interval compared the home with the index
        assert "The zebra crossed the dunes." in texts(search(client, "zebra dunes"))
        [skipped] = client.get("/v1/search/index").json()["skipped"]
        assert skipped["path"] == "word_photos/caf\\xe9.md"
        # Gone from the folder, gone from the report.
        os.unlink(os.fsencode(folder) + b"/caf\xe9.md")
        wait_for(
            lambda: client.get("/v1/search/index").json()["skipped"] == [],
            what="the report to forget the file",
        )


def test_using_a_home_does_not_touch_it(server, client):
    """A home made 0700 again on every use changed it (a chmod is a change): the watcher
    saw it and synced the home, which made it 0700 again, several times a second."""
    search(client, "anything")  # the home exists from here on
    before = os.stat(home(server, client)).st_ctime_ns
    search(client, "anything")
    assert client.get("/v1/anchors").status_code == 200
    client.post("/v1/anchors/resync")
    assert os.stat(home(server, client)).st_ctime_ns == before


def test_a_name_too_long_for_the_file_system_is_a_404_naming_it(server, client):
    """No file can have such a name, so none is there: a 404, as for any name that is
    not (the path is one the OpenAPI description allows; the limit is the file system's)."""
    (home(server, client) / "word_photos").mkdir(parents=True)
    long = "x" * 300 + ".md"
    read = client.get("/v1/files", params={"path": long})
    assert read.status_code == 404, read.text
    assert read.json()["problems"][0]["field"] == "path"
    assert "too long" in read.json()["problems"][0]["problem"]
    gone = client.delete(f"/v1/anchors/{long}")
    assert gone.status_code == 404, gone.text
    assert long in gone.json()["problems"][0]["problem"]


def test_only_a_letter_a_to_z_and_a_colon_is_a_drive(server, client):
    """`C:` starts a Windows path, refused as absolute; `é:` or `日:` starts a file name."""
    (home(server, client) / "é:notes.md").parent.mkdir(parents=True, exist_ok=True)
    (home(server, client) / "é:notes.md").write_text("a name with a colon\n")
    read = client.get("/v1/files", params={"path": "é:notes.md"})
    assert read.status_code == 200, read.text
    assert read.json()["text"] == "a name with a colon"
    drive = client.get("/v1/files", params={"path": "C:notes.md"})
    assert drive.status_code == 422 and "absolute" in drive.json()["problems"][0]["problem"]


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


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of any mode")
def test_a_file_the_service_may_not_read_is_a_4xx_naming_it(server, client):
    secret = home(server, client) / "memory" / "secret.md"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("Not for the service.\n")
    secret.chmod(0)
    read = client.get("/v1/files", params={"path": "memory/secret.md"})
    assert read.status_code == 422, read.text
    assert "Permission denied" in read.json()["problems"][0]["problem"]


# A 200 KB file named .md that is no text: an image's bytes, NULs among them.
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR honeycomb " + bytes(range(256)) * 800
# Bytes that are not UTF-8, with no NUL among them (another encoding, or an archive).
NOT_UTF8 = b"honeycomb " + bytes(range(128, 256)) * 800


def _skipped(client) -> dict[str, str]:
    return {s["path"]: s["problem"] for s in client.get("/v1/search/index").json()["skipped"]}


@pytest.mark.parametrize("junk", [BINARY, NOT_UTF8], ids=["nul-bytes", "not-utf8"])
def test_a_binary_md_is_not_indexed_and_is_named_until_it_is_text(server, client, junk):
    notes = home(server, client) / "memory"
    notes.mkdir(parents=True)
    (notes / "blob.md").write_bytes(junk)
    (notes / "real.md").write_text("The honeycomb frames hang in the shed.\n")
    wait_for(lambda: texts(search(client, "honeycomb frames shed")), 30, "the text indexed")
    assert texts(search(client, "honeycomb")) == ["The honeycomb frames hang in the shed."]
    problem = wait_for(lambda: _skipped(client).get("memory/blob.md"), 30, "the file skipped")
    assert "not" in problem and ("NUL" in problem or "UTF-8" in problem)

    # Named in `pps check`, as skipped on purpose and not as a problem of the index.
    result = CliRunner().invoke(
        app, ["check", "--data-dir", str(server.data_dir)], env=settings_env(**server.overrides)
    )
    assert f"skipped   memory/blob.md: {problem}" in result.stdout, result.stdout
    assert "file_not_indexed" not in result.stdout
    # And on the memory page, where the home's files are.
    ui = UI(server, client.headers["Authorization"].removeprefix("Bearer "))
    assert ui.sign_in().status_code == 303
    page = ui.get("/ui/memory?tab=files").text
    assert 'id="skipped"' in page and "memory/blob.md" in page and html.escape(problem) in page

    # It becomes text: indexed then, and no longer named.
    (notes / "blob.md").write_text("The honeycomb recipe needs lavender.\n")
    wait_for(
        lambda: "The honeycomb recipe needs lavender." in texts(search(client, "lavender")),
        30,
        "the file indexed once it is text",
    )
    assert "memory/blob.md" not in _skipped(client)
    assert "memory/blob.md" not in ui.get("/ui/memory?tab=files").text.split('id="files"')[0]


def test_text_past_its_first_bytes_that_is_binary_is_not_indexed_either(server, client):
    notes = home(server, client) / "memory"
    notes.mkdir(parents=True)
    (notes / "tail.md").write_bytes(b"The beehive notes.\n" * 1000 + BINARY)
    problem = wait_for(lambda: _skipped(client).get("memory/tail.md"), 30, "the file skipped")
    assert "NUL" in problem
    assert texts(search(client, "beehive notes")) == []
    assert client.get("/v1/search/index").json()["files"] == 0


def test_a_stray_byte_that_is_not_utf8_leaves_a_file_text():
    assert text_problem("Caf\xe9 au lait, ".encode("latin-1") + b"milk and sugar. " * 20) is None
    assert text_problem("The \ufffd sign is text.".encode()) is None
    assert text_problem(b"\xff\xfe" + "utf-16".encode("utf-16-le")) is not None

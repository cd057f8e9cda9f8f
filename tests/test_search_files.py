"""Files are the memory, the index a cache: files edited, renamed and deleted behind the
index are never returned as they were, and are found as they are within seconds;
memory_get reads only inside the entity's home; `pps reindex` rebuilds from disk."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.capture import entities
from tests.conftest import connect, wait_for
from tests.searching import home, search, texts, write


def paths(body: dict) -> list[str]:
    return [r.get("path") for r in body["results"]]


def test_an_edit_behind_the_index_is_never_returned_stale(server, client):
    note = write(
        server, client, "memory/pets.md", "# Pets\n\nOur cat Miso sleeps on the radiator.\n"
    )
    wait_for(lambda: "memory/pets.md" in paths(search(client, "where does the cat sleep")))
    note.write_text("# Pets\n\nOur cat Miso now sleeps in the laundry basket.\n")
    # Straight away, before any watcher could have run: the old text is never shown.
    for result in search(client, "where does the cat sleep")["results"]:
        if result.get("path") == "memory/pets.md":
            on_disk = note.read_text().splitlines()[result["start_line"] - 1 : result["end_line"]]
            assert result["text"] in "\n".join(on_disk)
    assert all("radiator" not in t for t in texts(search(client, "radiator cat")))
    wait_for(lambda: any("laundry basket" in t for t in texts(search(client, "laundry basket"))))


def test_a_renamed_file_is_found_under_its_new_name(server, client):
    old = write(
        server, client, "memory/trip.md", "The train to Porto leaves at 7:40 from platform 3.\n"
    )
    wait_for(lambda: "memory/trip.md" in paths(search(client, "train to Porto")))
    new = home(server, client) / "memory" / "travel-porto.md"
    os.rename(old, new)
    assert "memory/trip.md" not in paths(search(client, "train to Porto"))
    wait_for(lambda: "memory/travel-porto.md" in paths(search(client, "train to Porto")))


def test_deleted_files_and_folders_leave_the_index(server, client):
    write(server, client, "documents/recipes/bread.md", "Sourdough needs a lively starter.\n")
    write(server, client, "documents/recipes/soup.md", "Leek soup wants more pepper.\n")
    wait_for(
        lambda: len(search(client, "sourdough starter leek soup", tiers="domain")["results"]) == 2
    )
    (home(server, client) / "documents/recipes/bread.md").unlink()
    assert "documents/recipes/bread.md" not in paths(search(client, "sourdough starter"))
    folder = home(server, client) / "documents/recipes"
    (folder / "soup.md").unlink()
    folder.rmdir()
    assert search(client, "sourdough starter leek soup", tiers="domain")["results"] == []


def test_memory_get_reads_lines_of_home_files(server, client):
    write(server, client, "memory/list.md", "\n".join(f"line {i}" for i in range(1, 21)) + "\n")
    body = client.get("/v1/files", params={"path": "memory/list.md", "from": 5, "lines": 3}).json()
    assert body == {
        "path": "memory/list.md",
        "from": 5,
        "to": 7,
        "total_lines": 20,
        "text": "line 5\nline 6\nline 7",
    }
    whole = client.get("/v1/files", params={"path": "memory/list.md"}).json()
    assert whole["from"] == 1 and whole["to"] == 20
    past = client.get("/v1/files", params={"path": "memory/list.md", "from": 30}).json()
    assert past["text"] == "" and past["to"] == 29


def test_memory_get_refuses_paths_that_leave_the_home(server, client, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("not yours\n")
    write(server, client, "memory/ok.md", "fine\n")
    (home(server, client) / "memory" / "escape.md").symlink_to(secret)
    (home(server, client) / "memory" / "inside.md").symlink_to(
        home(server, client) / "memory/ok.md"
    )
    refused = {
        "../secret.md": "'..'",
        "memory/../../x.md": "'..'",
        str(secret): "absolute",
        "/etc/passwd": "absolute",
        "~/notes.md": "absolute",
        "memory/escape.md": "outside your home",
    }
    for path, why in refused.items():
        response = client.get("/v1/files", params={"path": path})
        assert response.status_code == 422, path
        problem = response.json()["problems"][0]
        assert problem["field"] == "path" and why in problem["problem"], (path, problem)
        assert "not yours" not in response.text
    assert client.get("/v1/files", params={"path": "memory/inside.md"}).json()["text"] == "fine"
    assert client.get("/v1/files", params={"path": "memory/none.md"}).status_code == 404
    for bad in ({"path": "memory/ok.md", "from": 0}, {"path": "memory/ok.md", "lines": 0}, {}):
        assert client.get("/v1/files", params=bad).status_code == 422
    # The escaping link is never indexed either.
    assert all("not yours" not in t for t in texts(search(client, "not yours")))


def test_a_symlinked_folder_that_leaves_the_home_is_not_indexed(server, client, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "private.md").write_text("The vault combination is on a yellow sticky note.\n")
    home(server, client).mkdir(parents=True, exist_ok=True)
    (home(server, client) / "documents").symlink_to(outside, target_is_directory=True)
    write(server, client, "memory/marker.md", "A marker note about yellow paint.\n")
    wait_for(lambda: "memory/marker.md" in paths(search(client, "yellow")))
    assert all("vault" not in t for t in texts(search(client, "vault combination sticky note")))


@pytest.mark.timeout(120)
def test_reindex_rebuilds_the_index_from_disk(server, client, processes):
    write(server, client, "memory/facts.md", "The spare bulbs are in the hallway drawer.\n")
    wait_for(lambda: "memory/facts.md" in paths(search(client, "light bulbs")))
    output = server.pps("reindex", "--entity", client.entity)
    assert client.entity in output and "files" in output
    assert paths(search(client, "where are the light bulbs"))[0] == "memory/facts.md"
    command = ["reindex", "--entity", "nobody", "--data-dir", str(server.data_dir)]
    refused = subprocess.run(
        [sys.executable, "-m", "pps.cli", *command],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1 and "no entity named 'nobody'" in refused.stderr


def test_a_home_that_holds_files_before_its_entity_exists_is_indexed(server):
    """`pps entity create` beside a running server, for a home that already has files
    (moved in, restored, written by hand): no watcher reports them, yet they are found."""
    keeper = server.app.state.service.runtime.keeper
    keeper.ready.wait(30)  # the start-up comparison is over
    folder = server.data_dir / "entities" / "orla" / "memory"
    folder.mkdir(parents=True)
    for made in (folder.parent, folder):
        made.chmod(0o700)  # as pps makes them: using the home then changes nothing
    ticks = keeper.ticks
    (folder / "boat.md").write_text("The rowing boat is moored at the second jetty.\n")
    wait_for(lambda: keeper.ticks > ticks + 1, 15, "the watcher to pass the new file by")
    client = connect(server, entities.create(server.db, "orla"))
    found = wait_for(lambda: texts(search(client, "rowing boat jetty")), 15, "the file found")
    assert "second jetty" in found[0]
    client.close()

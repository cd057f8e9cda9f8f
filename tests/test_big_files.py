"""A big file in one home cannot starve everyone else (issue 15, item 2): queries are
embedded ahead of any backlog, and a file of many chunks is searchable by its words at
once while its vectors come from the queue, in slices committed as they go."""

from __future__ import annotations

import os
import sys
import threading

from engine.capture import entities
from engine.kernel.config import Settings
from engine.search import embeddings
from engine.search.chunk_store import embed_text
from engine.store.db import Database
from tests.conftest import AppServer, connect, wait_for
from tests.searching import search, texts, write

LONG = "The pantry shelf holds flour, oats and the jar of honey from the market. " * 30


class Held:
    """The real model, held in the middle of each call until the test lets it go (so a
    backlog is provably still running while a query is asked)."""

    def __init__(self, engine):
        self.engine, self.running, self.go = engine, threading.Event(), threading.Event()

    def embed(self, texts, batch_size):
        self.priority = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        self.running.set()
        self.go.wait(60)
        return self.engine.embed(texts, batch_size=batch_size)


def test_a_query_never_waits_for_a_backlog(tmp_path):
    embedder = embeddings.get(Settings(data_dir=tmp_path))
    held = Held(embedder._bulk)
    embedder._bulk = held
    backlog = threading.Thread(target=embedder.embed, args=([LONG] * 40,))
    try:
        backlog.start()
        held.running.wait(30)
        vector = embedder.embed_one("where is the honey?")  # while the backlog is held
        assert vector.shape == (embedder.dim,) and backlog.is_alive()
        if sys.platform == "linux":  # the backlog takes only what queries leave of the CPU
            assert held.priority == embeddings.BULK_NICE
    finally:
        held.go.set()
        backlog.join(120)
        embedder._bulk = held.engine
    assert not backlog.is_alive()


def test_a_big_file_is_found_by_words_at_once_and_embedded_by_the_queue_in_slices(server, client):
    sections = [f"## Shelf {n}\nShelf {n} holds jars of plum jam number {n}." for n in range(150)]
    sections.append("## Bicycle\nThe red bicycle leans against the garage door.")
    write(server, client, "memory/pantry.md", "\n\n".join(sections) + "\n")
    # Found by its words as soon as the watcher has indexed it, vectors or not.
    wait_for(lambda: texts(search(client, "bicycle")), 30, "the file to be indexed")
    assert "red bicycle" in texts(search(client, "bicycle"))[0]
    stats = wait_for(
        lambda: (s := client.get("/v1/search/index").json())["vectors"] == s["chunks"] and s,
        120,
        "every chunk of the file to have its vector",
    )
    assert stats["chunks"] >= 151
    slices = server.db.conn.execute(
        "SELECT COUNT(*) FROM jobs WHERE entity = ? AND kind = 'embed_files' AND state = 'done'",
        (client.entity,),
    ).fetchone()[0]
    assert slices >= 151 // 64  # in slices, each committed, each a job of its own
    assert "red bicycle" in texts(search(client, "where is my bike parked"))[0]  # by meaning


def test_a_file_over_the_size_limit_is_skipped_reported_and_dropped(tmp_path):
    with (
        AppServer(tmp_path / "data", search_max_file_bytes=2048) as server,
        connect(server, entities.create(server.db, "mira")) as client,
    ):
        notes = server.data_dir / "entities" / "mira" / "memory" / "notes.md"
        notes.parent.mkdir(parents=True)
        notes.write_text("The kettle is in the left cupboard.\n")
        wait_for(lambda: texts(search(client, "kettle cupboard")), 30, "the file indexed")
        # It grows past the limit: out of the index, and said why, where a person looks.
        notes.write_text("The kettle moved. " + "Tea and toast. " * 200)
        skipped = wait_for(
            lambda: client.get("/v1/search/index").json()["skipped"], 30, "the file skipped"
        )
        assert skipped[0]["path"] == "memory/notes.md"
        assert "PPS_SEARCH_MAX_FILE_BYTES" in skipped[0]["problem"]
        assert texts(search(client, "kettle cupboard")) == []
        assert client.get("/health").json()["components"]["files"]["skipped"] == 1


GARDEN = (
    "The roses along the south fence came back after the late frost, and the tulips "
    "by the gate opened a week early this spring. "
) * 11 + "The spare house key hides under the blue flowerpot by the back door."


def test_every_chunk_is_read_whole_by_the_model(server, client):
    """A long paragraph is cut where the model's length ends (its title and headings in
    front), not where a count of characters does: the model would cut off the rest, and
    a sentence at the end would never be found by its meaning."""
    write(server, client, "memory/garden.md", f"# Garden\n\n{GARDEN}\n")
    wait_for(lambda: texts(search(client, "flowerpot")), 30, "the file to be indexed")
    embedder = embeddings.get(server.settings)
    rows = server.db.conn.execute(
        "SELECT kind, body, context FROM search_chunks WHERE entity = ? ORDER BY start_line, id",
        (client.entity,),
    ).fetchall()
    assert len(rows) >= 2 and len(GARDEN) <= server.settings.chunk_max_chars  # by tokens
    for row in rows:
        read = embed_text(row["kind"], row["body"], row["context"])
        assert embedder.count([read])[0] <= embedder.max_tokens
    assert " ".join(row["body"] for row in rows).split() == GARDEN.split()  # all of it
    assert "flowerpot" in texts(search(client, "where is the spare key hidden"))[0]


def _index(client) -> dict:
    return client.get("/v1/search/index").json()


def test_one_homes_backlog_holds_up_no_other_home_nor_anyones_new_turns(tmp_path):
    """Two homes at start: ann's with a long file (about a thousand chunks to embed), bob's
    with one note. bob's note is indexed, and his new turn gets its vector, while ann's
    backlog is still being embedded: the backlog goes to the queue a slice at a time,
    not in one piece before anyone else's home is looked at."""
    data_dir = tmp_path / "data"
    db = Database.open(Settings(data_dir=data_dir))
    ann, bob = entities.create(db, "ann"), entities.create(db, "bob")
    db.close()
    sections = [
        f"## Shelf {n}\n" + f"Shelf {n} holds jars of plum jam, pickled beans and oats. " * 12
        for n in range(1000)
    ]
    long = data_dir / "entities" / "ann" / "memory" / "pantry.md"
    long.parent.mkdir(parents=True)
    long.write_text("\n\n".join(sections) + "\n")
    note = data_dir / "entities" / "bob" / "memory" / "bike.md"
    note.parent.mkdir(parents=True)
    note.write_text("The red bicycle leans against the garage door.\n")
    with (
        AppServer(data_dir, queue_poll_s=0.05) as server,
        connect(server, ann) as a,
        connect(server, bob) as b,
    ):
        wait_for(lambda: texts(search(b, "bicycle garage")), 120, "bob's note to be indexed")
        behind = _index(a)
        assert behind["chunks"] >= 1000 and behind["vectors"] < behind["chunks"]
        posted = b.post("/v1/events", json=[{"channel": "cli", "content": "Tea at noon."}])
        assert posted.status_code == 200, posted.text
        wait_for(
            lambda: (s := _index(b))["vectors"] == s["chunks"], 120, "bob's turn to be embedded"
        )
        behind = _index(a)
        assert behind["vectors"] < behind["chunks"]  # ann's backlog is still going
        # ann's own new turn goes ahead of her file's backlog too.
        posted = a.post("/v1/events", json=[{"channel": "cli", "content": "Soup tonight."}])
        assert posted.status_code == 200, posted.text
        turn = posted.json()["events"][0]["id"]
        wait_for(
            lambda: server.db.conn.execute(
                "SELECT 1 FROM search_vectors v JOIN search_chunks c ON c.id = v.chunk_id"
                " WHERE c.event_id = ?",
                (turn,),
            ).fetchone(),
            120,
            "ann's turn to be embedded",
        )
        behind = _index(a)
        assert behind["vectors"] < behind["chunks"] - 1


def test_a_long_file_rewritten_holds_its_new_text_only(server, client):
    """A file of more chunks than one write stores (256) is replaced in several: once it is
    done the index holds the new text whole, none of the old, and the file's hash."""
    pantry = [f"## Shelf {n}\nShelf {n} holds jars of plum jam number {n}." for n in range(300)]
    write(server, client, "memory/pantry.md", "\n\n".join(pantry) + "\n")
    wait_for(lambda: _index(client)["chunks"] == 300, 60, "the long file indexed")
    cellar = [f"## Rack {n}\nRack {n} holds tins of smoked herring number {n}." for n in range(320)]
    write(server, client, "memory/pantry.md", "\n\n".join(cellar) + "\n")
    wait_for(
        lambda: _index(client)["chunks"] == 320 and texts(search(client, "smoked herring")),
        60,
        "the rewritten file indexed",
    )
    # Once the new chunks have their vectors, the meaning side answers "plum jam" with its
    # nearest (the herring); what must not come back is any old text.
    assert [t for t in texts(search(client, "plum jam")) if "Shelf" in t or "jam" in t] == []
    found = client.get("/v1/check").json()["entities"][0]
    assert [p for p in found["problems"] if p["layer"] == "files"] == []
    assert found["counts"]["files_indexed"] == 1

"""A big file in one home cannot starve everyone else (issue 15, item 2): queries are
embedded ahead of any backlog, and a file of many chunks is searchable by its words at
once while its vectors come from the queue, in slices committed as they go."""

from __future__ import annotations

import threading

from engine.capture import entities
from engine.search import embeddings
from engine.store.config import Settings
from tests.conftest import AppServer, connect, wait_for
from tests.searching import search, texts, write

LONG = "The pantry shelf holds flour, oats and the jar of honey from the market. " * 30


class Held:
    """The real model, held in the middle of each call until the test lets it go (so a
    backlog is provably still running while a query is asked)."""

    def __init__(self, engine):
        self.engine, self.running, self.go = engine, threading.Event(), threading.Event()

    def embed(self, texts, batch_size):
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

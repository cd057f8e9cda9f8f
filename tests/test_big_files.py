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


class Recording:
    """The real model, with each call it makes written down: (query waiting?, texts)."""

    def __init__(self, engine):
        self.engine, self.calls, self.query_waiting = engine, [], False

    def embed(self, texts, batch_size):
        self.calls.append((self.query_waiting, list(texts)))
        return self.engine.embed(texts, batch_size=batch_size)


def test_a_query_waits_for_one_slice_of_a_backlog_not_for_the_backlog(tmp_path):
    embedder = embeddings.get(Settings(data_dir=tmp_path))
    recording = Recording(embedder._engine)
    embedder._engine = recording
    try:
        backlog = threading.Thread(target=embedder.embed, args=([LONG] * 40,))
        backlog.start()
        wait_for(lambda: recording.calls, 30, "the backlog to reach the model")
        recording.query_waiting = True
        embedder.embed_one("where is the honey?")
        backlog.join(120)
    finally:
        embedder._engine = recording.engine
    first_query = next(
        i for i, (_, texts) in enumerate(recording.calls) if texts == ["where is the honey?"]
    )
    ran_while_waiting = [texts for waiting, texts in recording.calls[:first_query] if waiting]
    # The slice running when the query asked, and one that may start between the flag
    # and the call: never the rest of the backlog.
    assert len(ran_while_waiting) <= 2, "bulk slices ran while the query waited"
    assert all(
        sum(map(len, texts)) <= 8_000
        for _, texts in recording.calls
        if texts != ["where is the honey?"]
    )
    assert first_query < len(recording.calls) - 1, "the query ran only after the backlog"


def test_a_stream_of_queries_does_not_starve_the_backlog(tmp_path):
    embedder = embeddings.get(Settings(data_dir=tmp_path))
    stop, asked = threading.Event(), []

    def ask():
        while not stop.is_set():
            asked.append(embedder.embed_one("where is the honey?"))

    askers = [threading.Thread(target=ask) for _ in range(2)]
    for asker in askers:
        asker.start()
    try:
        wait_for(lambda: len(asked) > 10, 30, "the queries to flow")
        backlog = threading.Thread(target=embedder.embed, args=([LONG] * 12,))
        backlog.start()
        backlog.join(120)
        assert not backlog.is_alive(), "the backlog never got the model"
    finally:
        stop.set()
        for asker in askers:
            asker.join(30)


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

"""The knowledge graph's vectors follow the embedding model, on each backend (a real
FalkorDB and a real Neo4j 5, tests/graphs.py), with the real models and the stub LLM on
real HTTP. A graph extracted with the default model, then the process started with bge:
its facts are found by their words at once (and the answer says so), never by vectors of
the other model; its extraction waits; every vector of its nodes and facts is made again
with bge in the background; then a fact is found by its meaning. A re-embedding stopped
between batches goes on where it stopped: nothing lost, nothing made twice."""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import pytest
from stub_llm import StubLLM

from engine import backlogs
from engine.capture import entities
from engine.capture import events as capture
from engine.graph import episodes, reembed, texture, vectors
from engine.graph.backend import Graph
from engine.kernel.config import Settings
from engine.recall import fanout
from engine.recall.shapes import RecallRequest
from engine.runtime import CAPTURE_LISTENERS, Runtime
from engine.search import embeddings
from engine.search.index import Index
from engine.store import queue
from engine.store.db import Database
from tests.conftest import Clock, wait_for

SAID = [
    "Maria adopted a scruffy Terrier from the Boulder shelter.",
    "Jeff finished the Quarterly report for Lockheed on Friday.",
    "Lyra planted tomatoes along the south fence in Denver.",
]
MEANING = "rescued puppy"  # no word of it in any fact: found by its meaning or not at all


@pytest.fixture
def stub():
    with StubLLM() as llm:
        yield llm


@pytest.fixture
def first(tmp_path, graph_target, stub) -> Settings:
    """The settings of a data dir on the backend, with the default embedding model."""
    return Settings(
        data_dir=tmp_path / "data",
        **graph_target.settings(),
        llm_provider="openai_compatible",
        llm_base_url=stub.url,
        llm_model="stub",
        llm_timeout_s=5,
        search_rerank=0,
        recall_rerank=0,
        recall_graph_budget_ms=60_000,  # what is measured here is what it finds
    )


def _record(db: Database, entity: str, said: list[str]) -> queue.Job:
    """Turns stored as capture stores them, closed into an episode: its queued job."""
    events = [{"channel": "terminal", "content": text} for text in said]
    parsed = capture.parse_events(events, max_batch=50, max_content_bytes=10**5)
    capture.Capture(db, CAPTURE_LISTENERS).record(entity, parsed)
    (uuid,) = episodes.close_windows(db, episodes.Window(), force=True)
    row = db.conn.execute("SELECT * FROM jobs WHERE key = ?", (uuid,)).fetchone()
    return queue.Job.from_row(row)


def _build(settings: Settings) -> tuple[str, dict[str, int]]:
    """A graph extracted with `settings`' model: the entity and its counts."""
    db = Database.open(settings)
    graph = Graph(settings, db).start(sweep=False)
    try:
        entity = f"e{time.monotonic_ns()}"
        entities.create(db, entity)
        texture.handler(graph, db, settings)(_record(db, entity, SAID))
        assert graph.store is not None
        counts = graph.store.counts(entity)
        assert counts["entities"] and counts["facts"], counts
        found = reembed.record(db, entity)
        assert found is not None and found.model == settings.embedding_model
        return entity, counts
    finally:
        graph.stop()
        db.close()


def _vectors_of(graph: Graph, settings: Settings, entity: str) -> tuple[int, list[str]]:
    """How many of the graph's vectors there are, and the texts of those that are not the
    vector `settings`' model makes of their text (bge's int8 vectors move a little with
    the batch they are made in: `vectors.SAME`; the other model's are at about 0.3)."""
    assert graph.store is not None
    held = graph.store.stored_vectors(entity)
    made = embeddings.get(settings).embed([text for _, text, _ in held])
    wrong = [
        f"{kind} {text!r}"
        for (kind, text, vector), want in zip(held, made, strict=True)
        if vector is None or float(np.dot(_unit(vector), want)) < vectors.SAME
    ]
    return len(held), wrong


def _unit(vector) -> np.ndarray:
    array = np.asarray(list(vector), dtype=np.float32)
    return array / np.linalg.norm(array)


def _search(graph: Graph, db: Database, entity: str, query: str, **kw) -> texture.SearchResult:
    return texture.search(graph, db, entity, texture.SearchQuery(query=query), **kw)


def test_a_graph_moves_to_another_model_in_the_background(first, stub):
    entity, before = _build(first)
    moved = first.model_copy(update={"embedding_model": embeddings.BGE})

    # Started with bge, before anything in the background runs: found by words at once.
    db = Database.open(moved)
    graph = Graph(moved, db).start(sweep=False)
    try:
        words = _search(graph, db, entity, "Terrier shelter")
        assert words.status == "ok" and words.fallback == "bm25", words
        assert any("Terrier" in fact.fact for fact in words.facts), words
        assert words.model_dump()["fallback"] == "bm25"
        # A query of the new model is never compared with the old model's vectors.
        bge = embeddings.get(moved)
        meaning = _search(graph, db, entity, MEANING, vector=bge.embed_query(MEANING).tolist())
        assert meaning.fallback == "bm25" and meaning.facts == [], meaning
        # Recall's graph layer says how it ranked.
        layers = SimpleNamespace(settings=moved, db=db, index=Index(moved, db), graph=graph)
        results, manifest = fanout.ambient(layers, entity, RecallRequest(context="Terrier shelter"))
        assert manifest["graph"].status == "ok", manifest["graph"]
        assert "by words alone" in (manifest["graph"].detail or ""), manifest["graph"]
        assert any("Terrier" in item.text for item in results["graph"])
        # An episode that comes meanwhile waits: no LLM call, its queue paused and why.
        calls = stub.calls
        late = _record(db, entity, ["Omar bought a Kayak in Portland."])
        with pytest.raises(queue.Pause, match=reembed.PAUSED):
            texture.handler(graph, db, moved)(late)
        assert stub.calls == calls
    finally:
        graph.stop()
        db.close()

    # The server: the graph is made again in the background, the late episode after it.
    db = Database.open(moved)
    runtime = Runtime(moved, db)
    runtime.start()
    try:
        wait_for(lambda: runtime.graph.started.is_set(), 120, "the graph to start")
        graph = runtime.graph

        def settled() -> bool:
            found = reembed.record(db, entity)
            done = queue.counts(db.conn, episodes.JOB_KIND, entity)["done"]
            return found is not None and found.model == embeddings.BGE and done == 2

        wait_for(settled, 300, "the graph's vectors made again and the late episode in it")
        assert reembed.reembedding(db, entity) is None
        counts = graph.store.counts(entity)
        assert counts["entities"] > before["entities"], "the late episode's entities"
        assert counts["facts"] > before["facts"]
        total, wrong = _vectors_of(graph, moved, entity)
        assert total == counts["entities"] + counts["facts"] and wrong == [], wrong
        found = _search(graph, db, entity, MEANING)  # as REST's texture search: no vector
        assert found.fallback is None and "fallback" not in found.model_dump()
        assert found.facts and "Terrier" in found.facts[0].fact, found
        assert queue.status(db, entity).dead == []
    finally:
        runtime.stop()
        db.close()


def test_a_reembedding_stopped_between_batches_goes_on_where_it_stopped(first):
    entity, before = _build(first)
    moved = first.model_copy(update={"embedding_model": embeddings.BGE})
    clock = Clock()
    policy = queue.Policy(lease_s=60, clock=clock)

    db = Database.open(moved)
    graph = Graph(moved, db).start(sweep=False)
    try:
        started = reembed.settle(graph, db, entity)  # what the server's preparer does at start
        assert started.target == embeddings.BGE and started.done == 0
        assert started.total == before["entities"] + before["facts"]
        handle = reembed.handler(graph, db, moved, slice_size=2, page_size=2)
        job = queue.claim(db, reembed.JOB_KIND, "first", policy)
        assert job is not None
        made = handle(job)  # one batch; then the process dies before the job is done
        model, done, total = reembed.reembedding(db, entity) or ("", 0, 0)
        assert model == embeddings.BGE and made == done == 2 and total == started.total
        shown = backlogs.queue_status(db, moved, entity).backlogs  # pps queue, the queue page
        assert [(b.what, b.model, b.said) for b in shown if b.what == "graph vectors"] == [
            ("graph vectors", embeddings.BGE, f"2 of {total}")
        ], shown
        words = _search(graph, db, entity, "Terrier shelter")
        assert words.fallback == "bm25" and words.facts, "still by words, midway"
    finally:
        graph.stop()
        db.close()

    db = Database.open(moved)  # the restarted process
    graph = Graph(moved, db).start(sweep=False)
    try:
        again = reembed.settle(graph, db, entity)
        assert (again.target, again.done, again.since) == (embeddings.BGE, 2, started.since)
        handle = reembed.handler(graph, db, moved, slice_size=2, page_size=2)
        clock.advance(120)  # the dead worker's lease runs out: its job is claimed again
        jobs = 0
        while (job := queue.claim(db, reembed.JOB_KIND, "second", policy)) is not None:
            made += handle(job)
            assert queue.complete(db, job, "second")
            jobs += 1
        assert made == started.total, "each vector made once: none twice, none left out"
        assert jobs > 2 and reembed.reembedding(db, entity) is None
        assert graph.store is not None and graph.store.counts(entity) == before
        total, wrong = _vectors_of(graph, moved, entity)
        assert total == started.total and wrong == [], wrong
        found = _search(graph, db, entity, MEANING)
        assert found.fallback is None and "Terrier" in found.facts[0].fact, found
    finally:
        graph.stop()
        db.close()


def test_a_graph_from_before_its_model_was_recorded_is_judged_by_its_vectors(first):
    """A data dir upgraded from before migration 0111 has no record: with the model its
    graph was made with, the record says so and nothing is made again; with another,
    every vector is made again."""
    entity, before = _build(first)

    def forget_the_record(settings: Settings) -> Database:
        db = Database.open(settings)
        with db.write() as conn:
            conn.execute("DELETE FROM graph_vectors WHERE entity = ?", (entity,))
        return db

    db = forget_the_record(first)
    graph = Graph(first, db).start(sweep=False)
    try:
        assert _search(graph, db, entity, "Terrier shelter").fallback is None
        found = reembed.record(db, entity)
        assert found is not None and (found.model, found.target) == (first.embedding_model, None)
        assert queue.counts(db.conn, reembed.JOB_KIND, entity)["pending"] == 0
    finally:
        graph.stop()
        db.close()

    moved = first.model_copy(update={"embedding_model": embeddings.BGE})
    db = forget_the_record(moved)
    graph = Graph(moved, db).start(sweep=False)
    try:
        assert _search(graph, db, entity, "Terrier shelter").fallback == "bm25"
        found = reembed.record(db, entity)
        assert found is not None and (found.model, found.target) == (None, embeddings.BGE)
        handle = reembed.handler(graph, db, moved)
        job = queue.claim(db, reembed.JOB_KIND, "worker", queue.Policy())
        assert job is not None and handle(job) == before["entities"] + before["facts"]
        assert reembed.reembedding(db, entity) is None
        total, wrong = _vectors_of(graph, moved, entity)
        assert total == before["entities"] + before["facts"] and wrong == [], wrong
    finally:
        graph.stop()
        db.close()

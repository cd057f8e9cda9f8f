"""Feeding episodes to the graph, in process, on each backend (a real FalkorDB server and
a real Neo4j 5, see tests/graphs.py), the real embedding model, and the stub LLM on real
HTTP. Each LLM failure is a retry or a pause, never a lost or doubled episode. On Neo4j
every entity of the module shares one database, as under compose."""

from __future__ import annotations

import time

import pytest
from stub_llm import StubLLM

from engine.capture import entities
from engine.capture import events as capture
from engine.graph import episodes, texture
from engine.graph.backend import Graph
from engine.graph.server import FalkorServer
from engine.kernel.config import Settings
from engine.kernel.errors import NotFound
from engine.llm import budget, endpoint
from engine.runtime import CAPTURE_LISTENERS
from engine.search import embeddings
from engine.store import queue
from engine.store.db import Database
from tests.conftest import wait_for

TURNS = [
    "I moved to Denver with Lyra last spring.",
    "Lyra likes the Denver mountains.",
    "Jeff works at Lockheed on satellites.",
]


@pytest.fixture(scope="module")
def graph_settings(tmp_path_factory, graph_target):
    """One graph server for the module: the backend's settings that point at it."""
    if graph_target.backend == "neo4j":
        yield graph_target.settings()
        return
    with FalkorServer(tmp_path_factory.mktemp("graph")) as server:
        yield {"graph_backend": "falkordb", "graph_url": f"unix://{server.socket_path}"}


@pytest.fixture
def stub():
    with StubLLM() as llm:
        yield llm


@pytest.fixture
def make_graph(tmp_path, graph_settings, stub):
    """make_graph(**settings) -> (graph, db, settings), on the module's graph server."""
    made = []

    def make(**overrides):
        settings = Settings(
            **{
                "data_dir": tmp_path / f"data{len(made)}",
                **graph_settings,
                "llm_provider": "openai_compatible",
                "llm_base_url": stub.url,
                "llm_model": "stub",
                "llm_timeout_s": 2,
                **overrides,
            }
        )
        db = Database.open(settings)
        graph = Graph(settings, db).start(sweep=False)
        made.append((graph, db))
        return graph, db, settings

    yield make
    for graph, db in made:
        graph.stop()
        db.close()


def new_entity(db) -> str:
    name = f"e{time.monotonic_ns()}"
    entities.create(db, name)
    return name


def episode_job(db, entity, turns=TURNS) -> queue.Job:
    events = [{"channel": "terminal", "author": "Jeff", "content": t} for t in turns]
    parsed = capture.parse_events(events, max_batch=50, max_content_bytes=10**5)
    capture.Capture(db, CAPTURE_LISTENERS).record(entity, parsed)
    (uuid,) = episodes.close_windows(db, episodes.Window(), force=True)
    row = db.conn.execute("SELECT * FROM jobs WHERE key = ?", (uuid,)).fetchone()
    return queue.Job.from_row(row)


def test_an_episode_lands_with_facts_traced_to_its_events(make_graph, stub):
    graph, db, settings = make_graph()
    entity = new_entity(db)
    job = episode_job(db, entity)
    texture.handler(graph, db, settings)(job)
    assert graph.store.episode_uuids(entity) == [job.key]
    found = texture.search(graph, db, entity, texture.SearchQuery(query="Denver mountains"))
    assert found.status == "ok" and found.facts
    uids = [
        r[0]
        for r in db.conn.execute(
            "SELECT event_uid FROM events WHERE entity = ? ORDER BY id", (entity,)
        )
    ]
    assert [(f.event_uids, f.episodes) for f in found.facts] == [(uids, [job.key])] * len(
        found.facts
    )
    assert any("Denver" in f.fact for f in found.facts)
    vector = embeddings.get(settings).embed_one("Denver mountains").tolist()
    again = texture.search(
        graph, db, entity, texture.SearchQuery(query="Denver mountains"), vector=vector
    )
    assert [f.uuid for f in again.facts] == [f.uuid for f in found.facts]
    assert "json_schema" in stub.formats  # a plain OpenAI-compatible server


def test_adding_again_is_a_no_op(make_graph, stub):
    graph, db, settings = make_graph()
    entity = new_entity(db)
    job = episode_job(db, entity)
    handle = texture.handler(graph, db, settings)
    handle(job)
    before, calls = graph.store.counts(entity), stub.calls
    handle(job)  # a retry after the graph write, or a replay
    assert stub.calls == calls and graph.store.counts(entity) == before


def test_a_failure_midway_is_completed_once_with_the_same_facts(make_graph, stub):
    graph, db, settings = make_graph()
    clean, broken = new_entity(db), new_entity(db)
    handle = texture.handler(graph, db, settings)
    handle(episode_job(db, clean))
    stub.reset_counts()
    job = episode_job(db, broken)
    stub.fail("500", after=2)  # extraction succeeds, a later call fails
    with pytest.raises(Exception, match="500"):
        handle(job)
    handle(job)
    assert graph.store.episode_uuids(broken) == [job.key]
    assert graph.store.counts(broken) == graph.store.counts(clean)


@pytest.mark.parametrize("fault", ["500", "429", "garbage", "wrong_shape", "hang"])
def test_transient_llm_failures_are_retried_not_paused(make_graph, stub, fault):
    graph, db, settings = make_graph()
    entity = new_entity(db)
    job = episode_job(db, entity)
    stub.set_mode(fault)
    started = time.monotonic()
    with pytest.raises(Exception) as failure:
        texture.handler(graph, db, settings)(job)
    assert not isinstance(failure.value, queue.Pause)
    assert time.monotonic() - started < 10  # no sleeping retries inside a job
    if fault in ("500", "429"):
        assert stub.calls == 1  # one attempt: the queue owns retries
    stub.set_mode(None)
    texture.handler(graph, db, settings)(job)
    assert graph.store.episode_uuids(entity) == [job.key]


def test_a_refused_key_pauses_instead_of_burning_attempts(make_graph, stub):
    graph, db, settings = make_graph()
    job = episode_job(db, new_entity(db))
    stub.set_mode("401")
    with pytest.raises(queue.Pause, match="LLM_API_KEY"):
        texture.handler(graph, db, settings)(job)


def test_no_llm_means_the_job_waits(make_graph, stub):
    graph, db, settings = make_graph(llm_provider="none")
    entity = new_entity(db)
    job = episode_job(db, entity)
    with pytest.raises(queue.Pause, match="LLM_PROVIDER=none"):
        texture.handler(graph, db, settings)(job)
    assert stub.calls == 0
    assert texture.search(graph, db, entity, texture.SearchQuery(query="x")).status == "ok"


def test_llama_cpp_gets_the_schema_inside_json_object(make_graph, stub):
    stub.llama_cpp = True
    graph, db, settings = make_graph()
    entity = new_entity(db)
    texture.handler(graph, db, settings)(episode_job(db, entity))
    assert set(stub.formats) == {"json_object+schema"}
    assert graph.store.counts(entity)["facts"] > 0


def test_json_object_mode_puts_the_schema_in_the_prompt(make_graph, stub):
    graph, db, settings = make_graph(llm_response_format="json_object")
    entity = new_entity(db)
    texture.handler(graph, db, settings)(episode_job(db, entity))
    assert set(stub.formats) == {"json_object"}
    assert graph.store.counts(entity)["facts"] > 0


def test_calls_and_tokens_are_metered_and_the_daily_budget_holds(make_graph, stub):
    graph, db, settings = make_graph(graph_daily_calls=3)
    entity = new_entity(db)
    handle = texture.handler(graph, db, settings)
    handle(episode_job(db, entity))
    used = budget.usage_today(db, entity)
    assert used["calls"] == stub.calls >= 3 and used["tokens"] > 0
    with pytest.raises(queue.Pause, match=budget.BUDGET_SPENT):
        handle(episode_job(db, entity, ["Paris in May with Lyra."]))
    assert budget.usage_today(db, entity) == used


def test_triplets_and_notes_reach_the_graph(make_graph, stub):
    graph, db, settings = make_graph()
    entity = new_entity(db)
    stores = capture.Capture(db, CAPTURE_LISTENERS)
    trip = texture.add_triplet(
        stores,
        entity,
        texture.TripletIn(
            source="Jeff", relationship="works at", target="Acme", fact="Jeff works at Acme."
        ),
    )
    note = texture.add(stores, entity, texture.NoteIn(content="Lyra adopted a cat named Miso."))
    handle = texture.handler(graph, db, settings)
    for uuid in episodes.close_windows(db, episodes.Window()):
        row = db.conn.execute("SELECT * FROM jobs WHERE key = ?", (uuid,)).fetchone()
        handle(queue.Job.from_row(row))
    assert sorted(graph.store.episode_uuids(entity)) == sorted(
        [trip.episode_uuid, note.episode_uuid]
    )
    facts = texture.search(graph, db, entity, texture.SearchQuery(query="Acme")).facts
    acme = next(f for f in facts if f.fact == "Jeff works at Acme.")
    assert (acme.source, acme.name, acme.target) == ("Jeff", "WORKS_AT", "Acme")
    assert acme.event_uids == [trip.event_uid]
    miso = texture.search(graph, db, entity, texture.SearchQuery(query="cat Miso")).facts
    assert any(f.event_uids == [note.event_uid] for f in miso)


def test_one_entity_never_sees_or_deletes_anothers_facts(make_graph, stub):
    graph, db, settings = make_graph()
    owner, other = new_entity(db), new_entity(db)
    texture.handler(graph, db, settings)(episode_job(db, owner))
    fact = texture.search(graph, db, owner, texture.SearchQuery(query="Denver")).facts[0]
    assert texture.search(graph, db, other, texture.SearchQuery(query="Denver")).facts == []
    with pytest.raises(NotFound):
        texture.delete(graph, db, other, fact.uuid)
    with pytest.raises(NotFound):
        texture.explore(graph, db, other, texture.ExploreQuery(entity_name="Denver"))
    assert texture.delete(graph, db, owner, fact.uuid).deleted == "fact"
    left = texture.search(graph, db, owner, texture.SearchQuery(query="Denver")).facts
    assert fact.uuid not in {f.uuid for f in left}


def test_a_small_entity_beside_a_big_one_finds_its_own_facts_by_meaning(make_graph):
    """On Neo4j one vector index holds every entity's facts: the nearest to a query can
    all be another's. The small entity still finds its own, and only its own."""
    graph, db, _ = make_graph()
    big, small = new_entity(db), new_entity(db)
    graph.store.import_facts(
        big, [(f"Owner{i}", "HAS_PET", f"Cat{i}", f"Owner{i} has a pet cat.") for i in range(300)]
    )
    graph.store.import_facts(small, [("Mira", "OWNS", "Miso", "Mira owns a grey kitten.")])
    query = texture.SearchQuery(query="pet cat", limit=3)
    mine = texture.search(graph, db, small, query).facts
    assert [f.fact for f in mine] == ["Mira owns a grey kitten."]
    theirs = texture.search(graph, db, big, query).facts
    assert len(theirs) == 3 and all(f.fact.endswith("has a pet cat.") for f in theirs)


def test_explore_timeline_and_time_windows(make_graph, stub):
    graph, db, settings = make_graph()
    entity = new_entity(db)
    handle = texture.handler(graph, db, settings)
    for day, turns in (("2026-01-01", TURNS[:2]), ("2026-03-01", ["Jeff flew to Paris."])):
        events = [
            {
                "channel": "terminal",
                "author": "Jeff",
                "content": t,
                "created_at": f"{day}T10:00:00Z",
            }
            for t in turns
        ]
        capture.Capture(db, CAPTURE_LISTENERS).record(
            entity, capture.parse_events(events, max_batch=9, max_content_bytes=9999)
        )
    for uuid in episodes.close_windows(db, episodes.Window(), force=True):
        handle(
            queue.Job.from_row(
                db.conn.execute("SELECT * FROM jobs WHERE key = ?", (uuid,)).fetchone()
            )
        )
    around = texture.explore(graph, db, entity, texture.ExploreQuery(entity_name="Jeff", depth=2))
    assert around.center.name == "Jeff" and {"Denver", "Paris"} <= {n.name for n in around.nodes}
    line = texture.timeline(graph, db, entity, texture.TimelineQuery())
    assert [e.started_at[:10] for e in line.episodes] == ["2026-03-01", "2026-01-01"]
    assert all(e.facts and e.event_uids for e in line.episodes)
    march = texture.search(
        graph, db, entity, texture.SearchQuery(query="Jeff", since="2026-02-01T00:00:00Z")
    )
    assert march.facts and all("Paris" in f.fact for f in march.facts)


def test_a_deleted_episode_stays_out_of_replays(make_graph, stub):
    graph, db, settings = make_graph()
    entity = new_entity(db)
    handle = texture.handler(graph, db, settings)
    kept, dropped = episode_job(db, entity), episode_job(db, entity, ["Jeff sold the Kayak."])
    handle(kept)
    handle(dropped)
    assert texture.delete(graph, db, entity, dropped.key).deleted == "episode"
    assert graph.store.episode_uuids(entity) == [kept.key]
    graph.store.clear(entity)
    number = episodes.replay(db, graph.window, entity)
    for row in db.conn.execute("SELECT * FROM jobs WHERE key LIKE ?", (f"%/replay-{number}",)):
        handle(queue.Job.from_row(row))
    assert graph.store.episode_uuids(entity) == [kept.key]
    assert episodes.replay_progress(db, number)["total"] == 1
    line = texture.timeline(graph, db, entity, texture.TimelineQuery())
    assert [e.uuid for e in line.episodes] == [kept.key]


def test_an_empty_graph_next_to_its_log_is_replayed_when_configured(make_graph, stub):
    graph, db, settings = make_graph()
    entity = new_entity(db)
    job = episode_job(db, entity)
    texture.handler(graph, db, settings)(job)
    graph.store.clear(entity)  # the graph is lost; the log is not
    restarted = Graph(settings.model_copy(update={"graph_replay_on_empty": True}), db)
    restarted.start()
    try:
        replay = "SELECT * FROM jobs WHERE key LIKE ?", (f"{job.key}/replay-%",)
        # The check and the replay run in the background.
        wait_for(lambda: db.conn.execute(*replay).fetchall(), 10, "the replay to be queued")
        assert entity in restarted.empty_with_log
        (row,) = db.conn.execute(*replay)
        texture.handler(restarted, db, settings)(queue.Job.from_row(row))
        assert restarted.store.episode_uuids(entity) == [job.key]
    finally:
        restarted.stop()


GRAPH_STATES = "SELECT state FROM jobs WHERE kind = 'graph_episode' ORDER BY id"


def test_a_spent_budget_resumes_on_a_new_day(make_graph, stub):
    graph, db, settings = make_graph(graph_daily_calls=1)
    entity = new_entity(db)
    workers = queue.Workers(db, queue.Policy(poll_s=0.02, backoff_initial_s=0.05))
    workers.add(episodes.JOB_KIND, texture.handler(graph, db, settings))
    workers.start()
    try:
        episode_job(db, entity)
        episode_job(db, entity, ["Jeff sold the Kayak."])
        wait_for(
            lambda: [r[0] for r in db.conn.execute(GRAPH_STATES)] == ["done", "waiting"],
            20,
            "one episode done and the next waiting for tomorrow's budget",
        )
        graph._lift_spent_budgets()
        assert db.conn.execute("SELECT COUNT(*) FROM queue_pauses").fetchone()[0] == 1
        with db.write() as conn:  # the pause was taken yesterday (UTC)
            conn.execute("UPDATE queue_pauses SET since = '2000-01-01T00:00:00.000000Z'")
        graph._budget_checked = 0.0
        graph._lift_spent_budgets()
        assert db.conn.execute("SELECT COUNT(*) FROM queue_pauses").fetchone()[0] == 0
    finally:
        workers.stop()


def test_the_llm_probe_says_what_is_wrong(stub):

    settings = Settings(llm_provider="openai_compatible", llm_base_url=stub.url, llm_model="m")
    assert endpoint.probe(settings) == {"status": "ok"}
    stub.set_mode("401")
    assert endpoint.probe(settings)["status"] == "refused"
    gone = settings.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1"})
    assert endpoint.probe(gone)["status"] == "down"
    assert endpoint.probe(Settings(llm_provider="none"))["status"] == "unconfigured"
    assert stub.calls == 0  # no tokens spent
